"""Agents of the child-run tests: a supervisor that fans out to researchers.

Importable by the tests and by the worker processes they kill (`tree_worker.py`). Every
model reply costs the same, so roll-ups can be checked exactly: a researcher's run costs
`2 * RESEARCHER_REPLY_USD`, a supervisor's own `2 * SUPERVISOR_REPLY_USD`.
"""

import json
import os
import time
from pathlib import Path

from pydantic import BaseModel

from harness import Agent, Message, ModelRequest, ModelResponse, Usage, tool
from harness.gateway.scripted import FunctionModel, call, reply

LEDGER = Path(os.environ.get("CHILD_LEDGER", "/dev/null"))
FAN_OUT = int(os.environ.get("CHILD_FAN_OUT", "10"))
LATENCY_S = float(os.environ.get("CHILD_LATENCY_S", "0.05"))
RESEARCHER_REPLY_USD = 0.125
SUPERVISOR_REPLY_USD = 0.25
"""Costs that add up exactly in binary floating point."""


@tool(side_effects="mutating")
def record(token: str) -> str:
    """Append a line to the ledger (not safe to repeat)."""
    with LEDGER.open("a", encoding="utf-8") as ledger:
        ledger.write(token + "\n")
        ledger.flush()
        os.fsync(ledger.fileno())
    time.sleep(0.01)
    return "recorded"


def _priced(message: Message, usd: float) -> ModelResponse:
    return ModelResponse(
        message=message,
        finish_reason="tool_calls" if message.tool_calls else "stop",
        usage=Usage(input_tokens=100, output_tokens=10, requests=1, cost_usd=usd),
        model="tree-model",
    )


def _task(request: ModelRequest) -> str:
    return next(m.content or "" for m in request.messages if m.role == "user")


def _researcher(request: ModelRequest) -> ModelResponse:
    task = _task(request)
    if not any(m.role == "tool" for m in request.messages):
        return _priced(reply(None, call("record", {"token": task})), RESEARCHER_REPLY_USD)
    return _priced(reply(f"found {task}"), RESEARCHER_REPLY_USD)


def researcher() -> Agent:
    """Records its task in the ledger (a mutating call), then answers `found TASK`."""
    return Agent(
        name="researcher",
        model=FunctionModel(_researcher, latency_s=LATENCY_S, keep_requests=False),
        tools=[record],
    )


def _supervisor(request: ModelRequest) -> ModelResponse:
    results = [m.content or "" for m in request.messages if m.role == "tool"]
    if not results:
        task = _task(request)
        calls = [
            call("researcher", {"task": f"{task}/topic-{i}"}, id=f"fan-{i}") for i in range(FAN_OUT)
        ]
        return _priced(reply(None, *calls), SUPERVISOR_REPLY_USD)
    return _priced(reply(" | ".join(results)), SUPERVISOR_REPLY_USD)


def supervisor(fan_out_to: Agent | None = None) -> Agent:
    """Calls the researcher on FAN_OUT topics at once, then answers with every result."""
    return Agent(
        name="supervisor",
        model=FunctionModel(_supervisor, latency_s=LATENCY_S, keep_requests=False),
        tools=[(fan_out_to or researcher()).as_tool(description="Research one topic.")],
    )


class Finding(BaseModel):
    """What the structured researcher answers."""

    topic: str
    score: int


def _structured(request: ModelRequest) -> ModelResponse:
    payload = {"topic": _task(request), "score": 7}
    return _priced(reply(json.dumps(payload)), RESEARCHER_REPLY_USD)


def structured_researcher() -> Agent:
    """Answers with a `Finding` (an output type) at once."""
    return Agent(
        name="analyst", model=FunctionModel(_structured, keep_requests=False), output_type=Finding
    )


AGENTS = {"researcher": researcher, "supervisor": supervisor}
