"""A worker that executes supervisors and their researcher children until killed.

`tree_worker.py HOME`: a `Harness` on HARNESS_STORE (else HOME/harness.db) with a
one-second lease; prints `ready` once it executes runs.
"""

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from tree_agents import researcher, supervisor

from harness import Harness
from harness.runtime import Settings


async def main(home: str) -> None:
    helper = researcher()
    agents = (supervisor(helper), helper)
    async with Harness(Settings(home=Path(home)), agents=agents, lease_s=1.0, max_concurrent=64):
        print("ready", flush=True)
        await asyncio.Event().wait()


asyncio.run(main(sys.argv[1]))
