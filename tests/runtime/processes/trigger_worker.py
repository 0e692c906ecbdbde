"""A worker with the reviewer trigger: `trigger_worker.py HOME CODER_LATENCY_S [notrigger]`.

It opens a `Harness` on HARNESS_STORE that executes the coder's and the reviewer's runs
with a one-second lease and, unless told `notrigger`, starts a reviewer on every finished
coder run. It prints `ready OWNER` once open, then works until it is killed.
"""

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from trigger_agents import REVIEW, coder, reviewer

from harness import Harness
from harness.runtime import Settings


async def main(home: str, coder_latency_s: float, with_trigger: bool) -> None:
    agents = (coder(coder_latency_s), reviewer())
    h = Harness(Settings(home=Path(home)), agents=agents, lease_s=1.0)
    if with_trigger:  # before opening: its cursor is stored once open
        h.on("run_finished", {"agent": "coder"}, start="reviewer", task=REVIEW, name="review")
    async with h:
        print("ready", h.owner, flush=True)
        await asyncio.Event().wait()


asyncio.run(main(sys.argv[1], float(sys.argv[2]), sys.argv[3:] != ["notrigger"]))
