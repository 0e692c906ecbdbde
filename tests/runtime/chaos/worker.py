"""A worker process for the chaos test: executes runs of the chaos agent until killed."""

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from chaos_agent import chaos_agent

from harness import Harness
from harness.runtime import Settings


async def main(home: str) -> None:
    settings = Settings(home=Path(home))
    async with Harness(settings, agents=(chaos_agent(),), max_concurrent=25, lease_s=1.0):
        print("ready", flush=True)
        await asyncio.Event().wait()


asyncio.run(main(sys.argv[1]))
