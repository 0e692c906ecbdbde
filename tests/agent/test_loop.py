import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.agent import AgentLoop, AgentSpec
from harness.agent.loop import EMPTY_REPLY_NUDGE
from harness.core import Limits, Message, RunEvent, RunResult, ToolCall
from harness.core.codec import payload_to_dict
from harness.errors import ModelConnectionError, ToolError
from harness.gateway import Model, ModelRequest
from harness.runtime.bus import EventBus, RunRecorder
from harness.testing import FunctionModel, ScriptedModel, call, reply
from harness.tools import Toolset, tool
from harness.tools.builtin.files import file_tools


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def fail_always(reason: str) -> str:
    """A tool that refuses."""
    raise ToolError(f"refused: {reason}", hint="ask for something else")


async def run(
    model: Model,
    *,
    tools: Sequence[object] = (add,),
    limits: Limits | None = None,
    stream: bool = False,
) -> tuple[list[RunEvent], RunResult]:
    spec = AgentSpec(name="t", model=model, limits=limits or Limits())
    recorder = RunRecorder("run_t", EventBus())
    loop = AgentLoop(
        spec,
        model=model,
        toolset=Toolset(list(tools)),
        sink=recorder,  # type: ignore[arg-type]
        stream=stream,
    )
    result = await loop.run("run_t", [Message.system("sys"), Message.user("what is 2+3?")])
    return recorder.events, result


def types(events: list[RunEvent]) -> list[str]:
    return [e.type for e in events]


async def test_tool_call_then_final_answer() -> None:
    model = ScriptedModel([reply(None, call("add", {"a": 2, "b": 3}, id="c1")), reply("5")])
    events, result = await run(model)
    assert result.output == "5"
    assert result.termination == "final_answer"
    assert result.complete
    roles = [m.role for m in result.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    tool_message = result.messages[3]
    assert (tool_message.tool_call_id, tool_message.content) == ("c1", "5")
    # the second request carried the assistant tool_calls message before its tool message
    second = model.requests[1].messages
    assert second[2].tool_calls[0].id == "c1"
    assert second[3].tool_call_id == "c1"
    assert types(events) == [
        "run_started",
        "step_started",
        "model_called",
        "model_responded",
        "tool_started",
        "tool_completed",
        "step_started",
        "model_called",
        "model_responded",
        "agent_message",
        "run_finished",
    ]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[-1].payload.output == "5"
    assert result.usage.requests == 2
    assert result.usage.tool_calls == 1


async def test_parallel_calls_each_get_their_own_message_in_order() -> None:
    calls = [call("add", {"a": i, "b": 1}, id=f"c{i}") for i in range(5)]
    model = ScriptedModel([reply("adding", *calls), reply("done")])
    events, result = await run(model)
    tool_messages = [m for m in result.messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_messages] == [f"c{i}" for i in range(5)]
    assert [m.content for m in tool_messages] == [str(i + 1) for i in range(5)]
    completed = [e.payload.call_id for e in events if e.type == "tool_completed"]
    assert completed == [f"c{i}" for i in range(5)]


async def test_one_call_runs_in_the_runs_own_task_and_several_run_concurrently() -> None:
    seen: list[asyncio.Task[object] | None] = []
    both_waiting = asyncio.Barrier(2)

    @tool(side_effects="none")
    async def where(wait: bool) -> str:
        """Say which task runs the call."""
        seen.append(asyncio.current_task())
        if wait:  # returns only once the other call waits too: they run at the same time
            await asyncio.wait_for(both_waiting.wait(), timeout=5)
        return "here"

    one = reply(None, call("where", {"wait": False}, id="a"))
    two = reply(None, call("where", {"wait": True}, id="b"), call("where", {"wait": True}, id="c"))
    model = ScriptedModel([one, two, reply("done")])
    task = asyncio.create_task(run(model, tools=(where,)))
    _, result = await task
    assert result.output == "done"
    assert seen[0] is task
    assert len({id(t) for t in seen[1:]}) == 2
    assert task not in seen[1:]
    contents = [m.content for m in result.messages if m.role == "tool"]
    assert contents == ["here", "here", "here"]


@pytest.mark.parametrize(
    ("bad_call", "status"),
    [
        (call("nope", {}, id="x"), "unknown_tool"),
        (call("add", "{not json", id="x"), "invalid_json"),
        (call("add", {"a": "two"}, id="x"), "invalid_arguments"),
        (call("fail_always", {"reason": "no"}, id="x"), "tool_error"),
    ],
)
async def test_every_tool_failure_goes_back_to_the_model_and_the_run_goes_on(
    bad_call: object, status: str
) -> None:
    model = ScriptedModel([reply(None, bad_call), reply("recovered")])  # type: ignore[arg-type]
    events, result = await run(model, tools=(add, fail_always))
    assert result.output == "recovered"
    completed = next(e for e in events if e.type == "tool_completed")
    assert completed.payload.status == status
    assert completed.payload.ok is False
    seen_by_model = model.requests[1].messages[-1]
    assert seen_by_model.role == "tool"
    assert seen_by_model.tool_call_id == "x"
    assert seen_by_model.content


async def test_max_steps_ends_the_run_with_a_report_and_says_so() -> None:
    def model_turn(request: ModelRequest) -> Message:
        if not request.tools:
            return reply("report: I added 1 and 1 three times")
        return reply("still working", call("add", {"a": 1, "b": 1}))

    model = FunctionModel(model_turn)
    events, result = await run(model, limits=Limits(max_steps=3))
    assert result.termination == "max_steps"
    assert not result.complete
    assert result.output == "report: I added 1 and 1 three times"
    assert len(model.requests) == 4  # three steps, then the wrap-up turn without tools
    assert "max_steps" in model.requests[-1].messages[-1].content  # type: ignore[operator]
    assert events[-1].type == "run_finished"
    assert events[-1].payload.termination == "max_steps"
    assert events[-1].payload.detail == "it used all 3 of its steps"


async def test_an_empty_reply_is_not_a_final_answer() -> None:
    model = ScriptedModel([reply(""), reply("   "), reply("real answer")])
    _, result = await run(model)
    assert result.output == "real answer"
    nudges = [m for m in model.requests[2].messages if m.content == EMPTY_REPLY_NUDGE]
    assert len(nudges) == 2


async def test_a_model_error_fails_the_run_with_a_clear_event() -> None:
    def broken(request: ModelRequest) -> Message:
        raise ModelConnectionError("cannot reach http://127.0.0.1:9/v1")

    events, result = await run(FunctionModel(broken))
    assert result.termination == "error"
    failed = events[-1]
    assert failed.type == "run_failed"
    assert failed.payload.error_type == "ModelConnectionError"
    assert "127.0.0.1:9" in failed.payload.error


async def test_streaming_reports_text_deltas_and_the_same_result() -> None:
    model = ScriptedModel([reply(None, call("add", {"a": 2, "b": 3})), reply("the sum is five")])
    events, result = await run(model, stream=True)
    deltas = "".join(e.payload.text for e in events if e.type == "model_delta")
    assert deltas == "the sum is five"
    assert result.output == "the sum is five"


async def test_tool_results_in_events_are_summaries() -> None:
    @tool
    def big() -> str:
        """Return a lot of text."""
        return "y" * 10_000

    model = ScriptedModel([reply(None, call("big", {})), reply("ok")])
    events, result = await run(model, tools=(big,))
    completed = next(e for e in events if e.type == "tool_completed")
    assert len(completed.payload.result) <= 200
    assert completed.payload.truncated is True
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert len(tool_message.content) < 4200
    assert json.dumps(payload_to_dict(completed.payload))


async def test_cancel_propagates_out_of_the_loop() -> None:
    model = FunctionModel(lambda r: reply("x"), latency_s=30)
    task = asyncio.ensure_future(run(model))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


DEEP_ARRAY = "[" * 999
DEEP_OBJECT = '{"a":' * 999 + "1" + "}" * 999
WIDE = json.dumps({"a": 1, "b": "x" * 1_000_001})


@pytest.mark.parametrize(
    ("arguments", "limit"),
    [
        (DEEP_ARRAY, "nested 999 levels deep, more than the 64 levels"),
        (DEEP_OBJECT, "nested 999 levels deep, more than the 64 levels"),
        ('{"a": ' + "[" * 300 + "]" * 300 + ', "b": 1}', "nested 301 levels deep"),
        (WIDE, "1,000,018 characters, more than the 1,000,000 accepted"),
    ],
)
async def test_arguments_beyond_the_bounds_are_refused_and_the_run_goes_on(
    arguments: str, limit: str
) -> None:
    bad = ToolCall(id="deep", name="add", arguments=arguments)
    model = ScriptedModel(
        [reply(None, bad), reply(None, call("add", {"a": 1, "b": 2})), reply("3")]
    )
    events, result = await run(model)
    assert (result.termination, result.output) == ("final_answer", "3")
    statuses = [e.payload.status for e in events if e.type == "tool_completed"]
    assert statuses == ["invalid_arguments", "ok"]
    told = model.requests[1].messages[-1].content or ""
    assert limit in told
    assert "Send flatter, shorter arguments and call 'add' again." in told


async def test_empty_replies_are_repeated_failures_hint_first_then_stop() -> None:
    model = FunctionModel(lambda request: reply(""))
    events, result = await run(model)  # max_identical_failures=3
    assert (result.termination, result.complete) == ("repeated_failure", False)
    assert result.detail == "your last 3 replies were empty, even after a hint"
    assert len(model.requests) == 7  # 3 empty, the hint, 3 empty, then the wrap-up turn
    hints = [e for e in events if e.type == "hint_injected"]
    assert [e.payload.step for e in hints] == [3]
    fourth = [m.content for m in model.requests[3].messages[-2:]]
    assert fourth[0] == EMPTY_REPLY_NUDGE
    assert (fourth[1] or "").startswith("Note from the harness: your last 3 replies were empty.")


async def test_a_usable_reply_starts_the_count_of_empty_replies_afresh() -> None:
    script = ["", "", reply(None, call("add", {"a": 1, "b": 1})), "", "", "2"]
    model = ScriptedModel([reply(text) if isinstance(text, str) else text for text in script])
    events, result = await run(model)
    assert (result.termination, result.output) == ("final_answer", "2")
    assert not [e for e in events if e.type == "hint_injected"]


async def test_calls_in_the_wrap_up_turn_end_the_run_with_one_request() -> None:
    model = FunctionModel(lambda request: reply(None, call("add", {"a": 1, "b": 1})))
    _, result = await run(model, limits=Limits(max_steps=2))
    assert result.termination == "max_steps"
    assert len(model.requests) == 3  # two steps, one wrap-up turn whose calls are dropped
    assert not model.requests[-1].tools
    assert (result.output or "").startswith("The run stopped (max_steps: it used all 2")


async def test_a_catastrophic_search_pattern_does_not_stall_the_run(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a" * 28 + "b\n")  # 2**28 steps for a backtracking engine
    search = ToolCall(id="s", name="search", arguments=json.dumps({"pattern": "(a+)+$"}))
    model = ScriptedModel([reply(None, search), reply("nothing matches")])
    events, result = await run(model, tools=file_tools(tmp_path), limits=Limits(tool_timeout=5))
    assert (result.termination, result.output) == ("final_answer", "nothing matches")
    completed = next(e for e in events if e.type == "tool_completed")
    assert completed.payload.status == "ok"
    assert (model.requests[1].messages[-1].content or "").startswith("No matches for '(a+)+$'")
