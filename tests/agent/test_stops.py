"""Stop conditions: each limit stops the run exactly when it should, with one wrap-up turn."""

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from harness.agent import AgentLoop, AgentSpec
from harness.agent.stops import HINT_PREFIX, FailureTracker
from harness.core import Limits, Message, RunEvent, RunResult, ToolCall, Usage
from harness.core.events import ModelRetry, payloads
from harness.errors import ModelConnectionError, ToolError
from harness.gateway import ModelRequest, ModelResponse
from harness.runtime.bus import EventBus, RunRecorder
from harness.testing import FunctionModel, call, reply
from harness.tools import ApprovalPolicy, Toolset, tool
from harness.tools.toolset import ToolOutcome

RAN: list[str] = []


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two integers."""
    RAN.append(f"add {a} {b}")
    return a + b


@tool
def fail_always(reason: str) -> str:
    """A tool that refuses."""
    raise ToolError(f"refused: {reason}", hint="ask for something else")


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t


REPORT = "report: what I found so far"


def wrapping(step: Callable[[ModelRequest], Any]) -> Callable[[ModelRequest], Any]:
    """A model that answers the wrap-up turn (no tools) with REPORT, and `step` otherwise."""
    return lambda request: REPORT if not request.tools else step(request)


def priced(message: Message, *, tokens: int = 0, cost: float = 0.0) -> ModelResponse:
    usage = Usage(input_tokens=tokens, cost_usd=cost, requests=1)
    return ModelResponse(message=message, finish_reason="tool_calls", usage=usage)


async def run(
    model: FunctionModel,
    *,
    limits: Limits,
    tools: Sequence[object] = (add, fail_always),
    usage: Usage | None = None,
    clock: Clock | None = None,
    approvals: ApprovalPolicy | None = None,
) -> tuple[list[RunEvent], RunResult]:
    spec = AgentSpec(name="t", model=model, limits=limits, approvals=approvals or ApprovalPolicy())
    recorder = RunRecorder("run_t", EventBus())
    loop = AgentLoop(
        spec,
        model=model,
        toolset=Toolset(list(tools)),  # type: ignore[arg-type]
        sink=recorder,  # type: ignore[arg-type]
        clock=clock,
    )
    messages = [Message.system("sys"), Message.user("task")]
    return recorder.events, await loop.run("run_t", messages, usage=usage)


def of_type(events: list[RunEvent], kind: str) -> list[RunEvent]:
    return [e for e in events if e.type == kind]


def assert_valid_conversation(messages: Sequence[Message]) -> None:
    """Every tool message answers a call of the assistant message before its run of tools."""
    open_calls: set[str] = set()
    for message in messages:
        if message.role == "tool":
            assert message.tool_call_id in open_calls
            open_calls.discard(message.tool_call_id)
        else:
            assert not open_calls, f"unanswered calls before a {message.role} message"
            open_calls = {c.id for c in message.tool_calls}
    assert not open_calls


def assert_one_wrap_up_last(model: FunctionModel) -> None:
    without_tools = [i for i, r in enumerate(model.requests) if not r.tools]
    assert without_tools == [len(model.requests) - 1]


# --- max_steps --------------------------------------------------------------------------------


@pytest.mark.parametrize("max_steps", [1, 2, 5])
async def test_max_steps_stops_after_exactly_that_many_steps(max_steps: int) -> None:
    model = FunctionModel(wrapping(lambda r: reply(None, call("add", {"a": 1, "b": 1}))))
    events, result = await run(model, limits=Limits(max_steps=max_steps))
    assert result.termination == "max_steps"
    assert not result.complete
    assert result.output == REPORT
    assert len(model.requests) == max_steps + 1
    assert_one_wrap_up_last(model)
    assert len(of_type(events, "tool_completed")) == max_steps
    wrap_up = model.requests[-1].messages[-1]
    assert wrap_up.role == "user"
    assert f"it used all {max_steps} of its steps" in (wrap_up.content or "")
    assert [e.payload.wrap_up for e in of_type(events, "step_started")][-1] is True
    assert_valid_conversation(result.messages)


async def test_an_answer_on_the_last_allowed_step_is_a_final_answer() -> None:
    replies = iter([reply(None, call("add", {"a": 1, "b": 1})), reply("2")])
    model = FunctionModel(lambda r: next(replies))
    _, result = await run(model, limits=Limits(max_steps=2))
    assert (result.termination, result.complete, result.output) == ("final_answer", True, "2")
    assert len(model.requests) == 2


# --- max_tool_calls ---------------------------------------------------------------------------


async def test_max_tool_calls_never_runs_one_call_more() -> None:
    RAN.clear()

    def two_calls(request: ModelRequest) -> Message:
        step = len(model.requests)
        return reply(None, *(call("add", {"a": step, "b": i}, id=f"c{step}{i}") for i in (1, 2)))

    model = FunctionModel(wrapping(two_calls))
    events, result = await run(model, limits=Limits(max_tool_calls=3))
    assert RAN == ["add 1 1", "add 1 2", "add 2 1"]
    assert result.usage.tool_calls == 3
    assert result.termination == "max_tool_calls"
    assert result.output == REPORT
    assert len(model.requests) == 3  # two steps, then the wrap-up
    assert_one_wrap_up_last(model)
    skipped = [m for m in result.messages if m.tool_call_id == "c22"]
    assert len(skipped) == 1
    assert "not run" in (skipped[0].content or "")
    assert "at most 3 tool calls" in (skipped[0].content or "")
    statuses = [e.payload.status for e in of_type(events, "tool_completed")]
    assert statuses == ["ok", "ok", "ok", "not_run"]
    assert_valid_conversation(result.messages)


# --- budgets ----------------------------------------------------------------------------------


async def test_a_token_budget_reached_by_a_model_turn_stops_before_its_tools() -> None:
    RAN.clear()

    def turn(request: ModelRequest) -> ModelResponse:
        return priced(reply(None, call("add", {"a": len(model.requests), "b": 0})), tokens=100)

    model = FunctionModel(wrapping(turn))
    events, result = await run(model, limits=Limits(max_tokens=250))
    assert RAN == ["add 1 0", "add 2 0"]  # the third turn crossed the budget: its call never ran
    assert result.termination == "budget_tokens"
    assert not result.complete
    assert result.output == REPORT
    assert len(model.requests) == 4
    assert_one_wrap_up_last(model)
    assert "it used 300 tokens, its budget is 250" in (
        model.requests[-1].messages[-1].content or ""
    )
    assert of_type(events, "tool_completed")[-1].payload.status == "not_run"
    assert events[-1].payload.detail == "it used 300 tokens, its budget is 250"
    assert_valid_conversation(result.messages)


async def test_a_budget_already_spent_before_a_resume_goes_straight_to_the_wrap_up() -> None:
    model = FunctionModel(wrapping(lambda r: reply(None, call("add", {"a": 1, "b": 1}))))
    _, result = await run(model, limits=Limits(max_tokens=1000), usage=Usage(input_tokens=1000))
    assert result.termination == "budget_tokens"
    assert len(model.requests) == 1
    assert model.requests[0].tools == ()
    assert result.output == REPORT


async def test_a_cost_budget_counts_the_cost_of_every_model_turn() -> None:
    def turn(request: ModelRequest) -> ModelResponse:
        return priced(reply(None, call("add", {"a": 1, "b": 1})), cost=0.3)

    model = FunctionModel(wrapping(turn))
    events, result = await run(model, limits=Limits(max_cost_usd=0.5))
    assert result.termination == "budget_cost"
    assert result.output == REPORT
    assert len(model.requests) == 3  # 0.30, then 0.60 crosses 0.50: the wrap-up
    assert result.usage.cost_usd == pytest.approx(0.6)
    assert_one_wrap_up_last(model)
    assert events[-1].payload.termination == "budget_cost"
    assert "$0.6000, its budget is $0.5000" in events[-1].payload.detail


async def test_wall_clock_time_is_a_budget_too() -> None:
    clock = Clock()

    def slow_turn(request: ModelRequest) -> Message:
        clock.t += 40
        return reply(None, call("add", {"a": 1, "b": 1}))

    model = FunctionModel(wrapping(slow_turn))
    _, result = await run(model, limits=Limits(max_seconds=100), clock=clock)
    assert result.termination == "timeout"
    assert result.output == REPORT
    assert len(model.requests) == 4  # 40 s, 80 s, 120 s: the third turn's call is not run
    assert [m.content for m in result.messages if m.role == "tool"][-1].startswith(  # type: ignore[union-attr]
        "This call was not run"
    )


# --- the wrap-up turn -------------------------------------------------------------------------


async def test_the_wrap_up_turn_has_no_tools_and_drops_any_call_the_model_makes() -> None:
    model = FunctionModel(lambda r: reply("here is what I have", call("add", {"a": 1, "b": 1})))
    events, result = await run(model, limits=Limits(max_steps=1))
    assert len(model.requests) == 2
    assert model.requests[0].tools
    assert model.requests[1].tools == ()
    assert result.output == "here is what I have"
    assert result.messages[-1].tool_calls == ()
    assert len(of_type(events, "tool_started")) == 1
    assert_valid_conversation(result.messages)


async def test_an_empty_wrap_up_gives_the_stopped_report() -> None:
    model = FunctionModel(
        lambda r: reply("") if not r.tools else reply("trying", call("add", {"a": 1, "b": 1}))
    )
    _, result = await run(model, limits=Limits(max_steps=2))
    assert result.output is not None
    assert result.output.startswith("The run stopped (max_steps: it used all 2 of its steps)")
    assert "Last assistant text: trying" in result.output
    assert len(model.requests) == 3


async def test_a_failing_wrap_up_still_ends_the_run_with_its_reason() -> None:
    def turn(request: ModelRequest) -> Message:
        if not request.tools:
            raise ModelConnectionError("cannot reach http://127.0.0.1:9/v1")
        return reply(None, call("add", {"a": 1, "b": 1}))

    model = FunctionModel(turn)
    events, result = await run(model, limits=Limits(max_steps=1))
    assert result.termination == "max_steps"
    assert result.output is not None
    assert result.output.startswith("The run stopped (max_steps: it used all 1 of its steps)")
    assert "after 1 steps" in result.output
    assert "ModelConnectionError: cannot reach" in result.output
    assert events[-1].type == "run_finished"
    assert len(model.requests) == 2


# --- repeated failures ------------------------------------------------------------------------


def hint_steps(events: list[RunEvent]) -> list[int]:
    return [e.payload.step for e in of_type(events, "hint_injected")]


async def test_identical_failures_get_a_hint_then_stop_the_run() -> None:
    model = FunctionModel(wrapping(lambda r: reply(None, call("fail_always", {"reason": "x"}))))
    events, result = await run(model, limits=Limits(max_steps=50))
    assert hint_steps(events) == [3]
    hint = model.requests[3].messages[-1]
    assert hint.role == "user"
    assert (hint.content or "").startswith(HINT_PREFIX)
    assert "'fail_always' failed 3 times in a row" in (hint.content or "")
    assert "tool_error" in (hint.content or "")
    assert result.termination == "repeated_failure"
    assert len(model.requests) == 7  # three failures, the hint, three more, the wrap-up
    assert_one_wrap_up_last(model)
    assert result.output == REPORT
    assert "even after a hint" in events[-1].payload.detail


async def test_failures_that_alternate_are_counted_too() -> None:
    def vary(request: ModelRequest) -> Message:
        if len(model.requests) % 2:
            return reply(None, call("fail_always", {"reason": "x"}))
        return reply(None, call("no_such_tool", {}))

    model = FunctionModel(wrapping(vary))
    events, result = await run(model, limits=Limits(max_steps=50))
    assert hint_steps(events) == [6]  # never three alike in a row: six failures of any kind
    assert "last 6 tool calls all failed" in (model.requests[6].messages[-1].content or "")
    assert result.termination == "repeated_failure"
    assert len(model.requests) == 13


async def test_the_identical_limit_is_configurable() -> None:
    model = FunctionModel(wrapping(lambda r: reply(None, call("fail_always", {"reason": "x"}))))
    events, result = await run(model, limits=Limits(max_identical_failures=2))
    assert hint_steps(events) == [2]
    assert result.termination == "repeated_failure"
    assert len(model.requests) == 5


async def test_parallel_identical_failures_in_one_step_count_each() -> None:
    calls = [call("fail_always", {"reason": str(i)}) for i in range(3)]
    replies = iter([reply(None, *calls), reply("I give up: the tool refuses everything")])
    model = FunctionModel(lambda r: next(replies))
    events, result = await run(model, limits=Limits())
    assert hint_steps(events) == [1]
    assert result.termination == "final_answer"


async def test_a_success_in_between_resets_the_count_and_re_arms_the_hint() -> None:
    script = ["fail", "fail", "ok", "fail", "fail", "fail", "ok", "fail", "fail", "fail"]

    def turn(request: ModelRequest) -> Message:
        index = len(model.requests) - 1
        if index >= len(script):
            return reply("done")
        if script[index] == "ok":
            return reply(None, call("add", {"a": 1, "b": 1}))
        return reply(None, call("fail_always", {"reason": "x"}))

    model = FunctionModel(turn)
    events, result = await run(model, limits=Limits(max_steps=50))
    assert hint_steps(events) == [6, 10]
    assert result.termination == "final_answer"


async def test_denied_calls_are_failures_too() -> None:
    model = FunctionModel(wrapping(lambda r: reply(None, call("add", {"a": 1, "b": 1}))))
    policy = ApprovalPolicy(tools={"add": "deny"})
    events, result = await run(model, limits=Limits(), approvals=policy)
    assert hint_steps(events) == [3]
    assert "(denied)" in of_type(events, "hint_injected")[0].payload.hint
    assert result.termination == "repeated_failure"


def outcome(name: str, status: str) -> ToolOutcome:
    message = Message.tool("c", "text", name=name)
    return ToolOutcome(
        call=ToolCall(id="c", name=name, arguments="{}"),
        message=message,
        status=status,  # type: ignore[arg-type]
        output="text",
        truncated=False,
        duration_s=0.0,
    )


def test_the_tracker_counts_kinds_by_tool_and_status() -> None:
    tracker = FailureTracker(3)
    # same tool, different statuses: not identical, and fewer than six in a row
    for status in ("tool_error", "invalid_arguments", "tool_error"):
        assert tracker.record([outcome("t", status)]) is None
    # three alike at the end of the streak are identical, whatever came before
    assert tracker.record([outcome("t", "tool_crash")]) is None
    verdict = tracker.record([outcome("t", "tool_crash")])
    assert verdict is None  # the last three: tool_error, tool_crash, tool_crash
    verdict = tracker.record([outcome("t", "tool_crash")])
    assert verdict is not None
    assert verdict.action == "hint"
    assert "'t' failed 3 times in a row with the same kind of error (tool_crash)" in verdict.text
    assert tracker.record([outcome("t", "tool_error"), outcome("u", "tool_error")]) is None
    verdict = tracker.record([outcome("v", "tool_error"), outcome("w", "unknown_tool")])
    assert verdict is None  # four since the hint
    verdict = tracker.record([outcome("x", "tool_error"), outcome("y", "denied")])
    assert verdict is not None
    assert verdict.action == "stop"


# --- gateway notices --------------------------------------------------------------------------


RETRY = ModelRetry(
    request_id="req_1",
    model="m",
    attempt=1,
    max_attempts=2,
    status=503,
    error="ModelServerError",
    message="busy",
    delay_s=0.0,
    retry_after_s=None,
)


async def test_gateway_notices_become_run_events_with_the_step() -> None:
    def noisy(request: ModelRequest) -> Message:
        assert request.observer is not None
        request.observer(RETRY)
        return reply("ok")

    events, _ = await run(FunctionModel(noisy), limits=Limits())
    assert payloads(events, ModelRetry) == [dataclasses.replace(RETRY, step=1)]
