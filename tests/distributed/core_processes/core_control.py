"""`core_control.py HOME ADDRESS QUEUE VERB RUN [CALL]`: one verb on a run, from another process.

VERB is pause, resume, cancel or approve (CALL); it opens a `Harness` that executes
nothing, on the same store and Temporal, and prints `ok`.
"""

import asyncio
import sys
from pathlib import Path

from harness import Harness
from harness.runtime import Settings
from harness.runtime.runtime_settings import RuntimeSettings


async def main(home: str, address: str, queue: str, verb: str, run_id: str, *rest: str) -> None:
    runtime = RuntimeSettings(backend="temporal", temporal_address=address, task_queue=queue)
    async with Harness(Settings(home=Path(home), runtime=runtime), execute=False) as h:
        if verb == "approve":
            await h.approve(run_id, rest[0], by="user:other-process")
        elif verb == "cancel":
            await h.cancel(run_id, reason="from another process", by="user:other-process")
        else:
            await getattr(h, verb)(run_id)
    print("ok", flush=True)


asyncio.run(main(*sys.argv[1:]))
