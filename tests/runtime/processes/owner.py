"""A process that owns runs until it is killed: `owner.py HOME AGENT [TASK]`.

It opens a `Harness` on HARNESS_STORE (else HOME/harness.db) that executes runs of AGENT
(a name in `kill_agents.AGENTS`) with a one-second lease. With TASK it submits one run and
prints `RUN_ID OWNER`; without, it prints `ready OWNER`. Then it waits to be killed.
"""

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from kill_agents import AGENTS

from harness import Harness
from harness.runtime import Settings


async def main(home: str, agent_name: str, task: str | None) -> None:
    agent = AGENTS[agent_name]()
    async with Harness(Settings(home=Path(home)), agents=(agent,), lease_s=1.0) as h:
        if task is None:
            print("ready", h.owner, flush=True)
        else:
            print(await h.submit(agent, task), h.owner, flush=True)
        await asyncio.Event().wait()


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
