"""The agent of the Temporal chaos tests: importable by the tests and by the workers they kill.

A three-step run: the model asks for `append_line(task)` (mutating: never safe to repeat),
then `count_lines()` (idempotent), then answers with what it saw of both results, so the
answer tells whether the model was told the first call's outcome is unknown.

Both the mutating tool and the model can be held at a point the test chooses, so that a
SIGKILL lands exactly there (never by timing): while the file `hold-tool` exists in the
directory CHAOS_HOLD, `append_line` waits after its side effect is durable and before it
returns; while `hold-model-N` exists, the model's N-th turn of a run (1, 2, 3) waits after
the call was written to the model ledger and before it answers. Every mutation is one line
of the ledger CHAOS_LEDGER, written with fsync; every model turn that started is one line
`TASK N PID` of CHAOS_MODEL_LEDGER (PID: the process that made it). The variables are read
at each call, so one module serves a test process and workers with different settings.
"""

import asyncio
import os
import time
from pathlib import Path

from harness import Agent, Message, ModelRequest, tool
from harness.agent.loop import UNKNOWN_OUTCOME
from harness.gateway.scripted import FunctionModel, call, reply
from harness.tools.approvals import ApprovalPolicy

HOLD_POLL_S = 0.02


def _path(variable: str) -> Path | None:
    value = os.environ.get(variable)
    return Path(value) if value else None


def _append(path: Path | None, line: str) -> None:
    if path is None:
        return
    with path.open("a", encoding="utf-8") as ledger:
        ledger.write(line + "\n")
        ledger.flush()
        os.fsync(ledger.fileno())


def _held(name: str) -> bool:
    directory = _path("CHAOS_HOLD")
    return directory is not None and (directory / name).exists()


@tool(side_effects="mutating")
def append_line(token: str) -> str:
    """Append a line to the ledger (not safe to repeat)."""
    _append(_path("CHAOS_LEDGER"), token)
    while _held("hold-tool"):  # done, not yet returned: a kill now leaves its outcome unknown
        time.sleep(HOLD_POLL_S)
    return "appended"


@tool(side_effects="idempotent")
def count_lines() -> int:
    """Count the lines of the ledger (safe to repeat)."""
    ledger = _path("CHAOS_LEDGER")
    return len(ledger.read_text(encoding="utf-8").splitlines()) if ledger and ledger.exists() else 0


def _task(request: ModelRequest) -> str:
    return next(m.content or "" for m in request.messages if m.role == "user")


async def _script(request: ModelRequest) -> Message:
    task = _task(request)
    results = [m for m in request.messages if m.role == "tool"]
    turn = len(results) + 1
    _append(_path("CHAOS_MODEL_LEDGER"), f"{task} {turn} {os.getpid()}")
    while _held(f"hold-model-{turn}"):
        await asyncio.sleep(HOLD_POLL_S)
    if turn == 1:
        return reply(None, call("append_line", {"token": task}, id=f"{task}-append"))
    if turn == 2:
        return reply(None, call("count_lines", {}, id=f"{task}-count"))
    appended = "unknown" if results[0].content == UNKNOWN_OUTCOME else "ok"
    return reply(f"done {task}: append {appended}")


def ledger_agent() -> Agent:
    """The three-step agent of the chaos tests (see the module's docstring)."""
    return Agent(
        name="ledger",
        model=FunctionModel(_script, keep_requests=False),
        tools=[append_line, count_lines],
    )


def asking_agent() -> Agent:
    """The ledger agent, whose mutating call waits for a person's approval."""
    return Agent(
        name="asking",
        model=FunctionModel(_script, keep_requests=False),
        tools=[append_line, count_lines],
        approvals=ApprovalPolicy(tools={"append_line": "ask"}),
    )
