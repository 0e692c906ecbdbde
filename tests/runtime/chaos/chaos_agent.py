"""The agent of the chaos test, importable by the test and by the worker it kills."""

import os
import time
from pathlib import Path

from harness import Agent, Message, ModelRequest, tool
from harness.gateway.scripted import FunctionModel, call, reply

LOG = Path(os.environ.get("CHAOS_LOG", "/dev/null"))
RECORDED_AFTER_S = 0.2
"""How long a mutation stays done but not yet recorded: the window a kill must hit for the
"outcome unknown" path to be taken."""


@tool(side_effects="mutating")
def append_line(token: str) -> str:
    """Append a line to the chaos log (not safe to repeat)."""
    with LOG.open("a", encoding="utf-8") as log:
        log.write(token + "\n")
        log.flush()
        os.fsync(log.fileno())
    # The result is recorded only after this: a kill meanwhile leaves the outcome unknown.
    time.sleep(RECORDED_AFTER_S)
    return "appended"


@tool(side_effects="idempotent")
def count_lines() -> int:
    """Count the lines of the chaos log (safe to repeat)."""
    return len(LOG.read_text(encoding="utf-8").splitlines()) if LOG.exists() else 0


def _script(request: ModelRequest) -> Message:
    results = [m for m in request.messages if m.role == "tool"]
    task = next(m.content for m in request.messages if m.role == "user")
    if not results:
        return reply(None, call("append_line", {"token": f"{task}"}))
    if len(results) == 1:
        return reply(None, call("count_lines", {}))
    return reply(f"done {task}")


def chaos_agent(latency_s: float = 0.05) -> Agent:
    """A three-step agent: a mutating call, an idempotent call, an answer."""
    return Agent(
        name="chaos",
        model=FunctionModel(_script, latency_s=latency_s),
        tools=[append_line, count_lines],
    )
