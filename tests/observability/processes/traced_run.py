"""A harness process that runs one traced run, says so, and waits to be killed.

Usage: traced_run.py HOME. Tracing comes from the inherited `OTEL_*` variables. Prints
`done RUN_ID EXPORTER_PID` once the run finished and its spans were handed over.
"""

import asyncio
import sys
from pathlib import Path

from harness import Agent, Harness, tool
from harness.observability.export_process import ProcessExport
from harness.runtime import Settings
from harness.testing import FunctionModel, call, reply


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def answer(request: object) -> object:
    if not any(m.role == "tool" for m in getattr(request, "messages", ())):
        return reply(None, call("add", {"a": 1, "b": 2}, id="c1"))
    return reply("3")


async def main(home: Path) -> None:
    agent = Agent(name="adder", model=FunctionModel(answer), tools=[add])
    export = ProcessExport()
    h = Harness(Settings(home=home), traces=export)
    await h.open()
    result = await h.run(agent, "add 1 and 2", timeout=30)
    await asyncio.sleep(0.2)  # the bus hands the last events to the tracer after the result
    print("done", result.run_id, export.child.pid, flush=True)
    await asyncio.sleep(600)


asyncio.run(main(Path(sys.argv[1])))
