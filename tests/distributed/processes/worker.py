"""A worker process of the chaos tests: executes runs of the ledger agent until killed.

    python worker.py HOME embedded
    python worker.py HOME temporal ADDRESS TASK_QUEUE

It prints `ready` once it takes work. The embedded worker claims queued runs from the store
under HOME (a short lease, so a killed worker's runs are taken over quickly); the temporal
worker polls TASK_QUEUE on the Temporal server at ADDRESS and writes to the same store.
"""

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from backends import settings
from ledger_agent import asking_agent, ledger_agent

from harness import Harness


async def main(home: str, *backend: str) -> None:
    async with Harness(
        settings(Path(home), list(backend)),
        agents=(ledger_agent(), asking_agent()),
        max_concurrent=200,
        lease_s=1.0,
    ):
        print("ready", flush=True)
        await asyncio.Event().wait()


asyncio.run(main(*sys.argv[1:]))
