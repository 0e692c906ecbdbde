"""`core_worker.py HOME ADDRESS QUEUE`: a Temporal worker of the test agents until killed.

Prints `ready` once its worker polls the queue.
"""

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from core_agents import AGENTS

from harness import Harness
from harness.runtime import Settings
from harness.runtime.runtime_settings import RuntimeSettings


async def main(home: str, address: str, queue: str) -> None:
    runtime = RuntimeSettings(backend="temporal", temporal_address=address, task_queue=queue)
    agents = tuple(make() for make in AGENTS.values())
    async with Harness(Settings(home=Path(home), runtime=runtime), agents=agents):
        print("ready", flush=True)
        await asyncio.Event().wait()


asyncio.run(main(*sys.argv[1:4]))
