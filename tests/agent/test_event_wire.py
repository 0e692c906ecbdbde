"""The events the agent loop emits keep the JSON that harness wrote before they were typed.

`tests/fixtures/events_emitted.jsonl` was written by running these scenarios on the code
from before typed event payloads (untyped dicts); the typed classes and the codec must give
the same bytes. Regenerate it only for a deliberate change of the wire format (with a new
schema version): `python tests/agent/test_event_wire.py > tests/fixtures/events_emitted.jsonl`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from harness.agent import AgentLoop, AgentSpec
from harness.core import Limits, Message, ToolCall, Usage
from harness.core.codec import dumps, event_to_dict
from harness.errors import ToolError
from harness.gateway import Model, ModelRequest, ModelResponse
from harness.memory import ContextPolicy
from harness.runtime.bus import EventBus, RunRecorder
from harness.testing import FunctionModel, ScriptedModel, call, reply
from harness.tools import Toolset, tool
from harness.tools.approvals import ApprovalDecision, ApprovalPolicy, ApprovalRequest

GOLDEN = Path(__file__).parent.parent / "fixtures" / "events_emitted.jsonl"


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def fetch(url: str) -> str:
    """Fetch a page (this one never works)."""
    raise ToolError(f"cannot reach {url}", hint="try another source")


@tool(approval="ask")
def deploy(env: str) -> str:
    """Deploy."""
    return "deployed"


@tool(side_effects="none")
def big(n: int) -> str:
    """A long text."""
    return "word " * n


class Report(BaseModel):
    city: str
    celsius: float


def plan(*steps: str) -> str:
    body = json.dumps({"steps": [{"description": s} for s in steps]})
    return f"Here is my plan:\n```json\n{body}\n```"


async def deny(request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision(approved=False, by="user:x", reason="not today")


def compacting(request: ModelRequest) -> ModelResponse:
    """Calls `big` until 12 results were sent, then answers; writes summaries when asked."""
    size = sum(len(m.content or "") for m in request.messages) // 4
    if "summar" in (request.messages[0].content or "").lower():
        message = Message.assistant("SUMMARY so far")
    elif not request.tools or sum(m.role == "tool" for m in request.messages) > 12:
        message = Message.assistant("done")
    else:
        arguments = '{"n": 300}'
        message = Message.assistant(
            None, [ToolCall(id=f"c{len(request.messages)}", name="big", arguments=arguments)]
        )
    return ModelResponse(
        message=message,
        finish_reason="tool_calls" if message.tool_calls else "stop",
        usage=Usage(input_tokens=size, output_tokens=5, requests=1),
    )


def passes_second() -> Callable[[str, Any], bool | str]:
    seen: list[str] = []

    def verifier(answer: str, context: Any) -> bool | str:
        seen.append(answer)
        return len(seen) > 1 or "not yet"

    return verifier


def boom(request: ModelRequest) -> str:
    raise RuntimeError("boom")


Scenario = tuple[str, AgentSpec, list[Any], dict[str, Any]]


def scenarios() -> Iterator[Scenario]:
    """Runs that emit 17 of the event types (the others come from the runtime and gateway)."""
    adds = [reply(None, call("add", {"a": 1, "b": 1}, id=f"c{i}")) for i in range(2)]
    fetches = [reply(None, call("fetch", {"url": "x"}, id=f"f{i}")) for i in range(4)]
    context = ContextPolicy(context_window=2000, trim_at=0.5, summarize_at=0.5, keep_last_turns=1)
    planned = [plan("add 2 and 3"), reply(None, call("add", {"a": 2, "b": 3}, id="c1"))]
    yield ("tools", spec([reply(None, call("add", {"a": 2, "b": 3}, id="c1")), "5"]), [add], {})
    yield ("max_steps", spec([*adds, "report"], limits=Limits(max_steps=2)), [add], {})
    output = ["sunny", '{"city": "Paris", "celsius": 21}']
    yield ("output", spec(output, output_type=Report), [], {})
    yield ("verifier", spec(["a", "b"], verifier=passes_second()), [], {})
    asked = [reply(None, call("deploy", {"env": "prod"}, id="d")), "finished"]
    yield ("approval", spec(asked, approvals=ApprovalPolicy()), [deploy], {"approver": deny})
    planning = [*planned, "sum is 5", "The answer is 5."]
    yield ("plan", spec(planning, strategy="plan_execute"), [add], {})
    yield ("hints", spec([*fetches, "gave up"]), [fetch], {})
    yield ("stream", spec(["hello there"]), [], {"stream": True})
    yield ("compaction", spec(FunctionModel(compacting), context=context), [big], {})
    yield ("failed", spec(FunctionModel(boom)), [], {})


def spec(model: list[Any] | Model, **options: Any) -> AgentSpec:
    chosen = ScriptedModel(model) if isinstance(model, list) else model
    return AgentSpec(name="wire", model=chosen, **options)


async def record() -> list[str]:
    """Every event of every scenario, as stored JSON, without what varies between runs."""
    lines: list[str] = []
    for name, agent, tools, options in scenarios():
        recorder = RunRecorder("run_w", EventBus())
        model = agent.model
        assert not isinstance(model, str)
        loop = AgentLoop(agent, model=model, toolset=Toolset(tools), sink=recorder, **options)
        system = agent.system_prompt if agent.output_spec else "sys"
        await loop.run("run_w", [Message.system(system), Message.user("task")])
        for event in recorder.events:
            data = event_to_dict(event)
            data["ts"] = 0
            payload = data["payload"]
            for key, steady in (("duration_s", 0), ("request_id", "req")):
                if key in payload:
                    payload[key] = steady
            lines.append(f"{name} {dumps(data)}")
    return lines


async def test_the_loop_emits_the_bytes_written_before_events_were_typed() -> None:
    lines = await record()
    assert lines == GOLDEN.read_text(encoding="utf-8").splitlines()
    kinds = {json.loads(line.split(" ", 1)[1])["type"] for line in lines}
    assert len(kinds) == 17


if __name__ == "__main__":
    print("\n".join(asyncio.run(record())))
