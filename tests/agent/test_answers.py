"""Final answers are checked before a run ends: structured output with repairs, then a verifier."""

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from harness.agent import AgentLoop, AgentSpec
from harness.agent.output import REPAIR_LEAD
from harness.agent.verify import VerifyContext, VerifyResult
from harness.core import Limits, Message, RunEvent, RunResult
from harness.core.codec import payload_to_dict
from harness.core.events import CompletionChecked, payloads
from harness.gateway import Model, ModelRequest
from harness.runtime.bus import EventBus, RunRecorder
from harness.testing import FunctionModel, ScriptedModel, call, reply
from harness.tools import Toolset, tool


class Report(BaseModel):
    city: str
    celsius: float


WEATHER_SCHEMA = {
    "title": "weather",
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
    "additionalProperties": False,
}


@tool(side_effects="none")
def lookup(city: str) -> str:
    """Look up the weather of a city."""
    return f"{city}: 21 degrees"


async def run(
    model: Model, *, tools: Sequence[object] = (lookup,), **spec: Any
) -> tuple[list[RunEvent], RunResult]:
    agent = AgentSpec(name="t", model=model, **spec)
    recorder = RunRecorder("run_t", EventBus())
    loop = AgentLoop(agent, model=model, toolset=Toolset(list(tools)), sink=recorder)  # type: ignore[arg-type]
    messages = [Message.system(agent.system_prompt), Message.user("Weather in Paris?")]
    result = await loop.run("run_t", messages)
    return recorder.events, result


def checks(events: list[RunEvent], kind: str) -> list[CompletionChecked]:
    return [c for c in payloads(events, CompletionChecked) if c.check == kind]


def repairs(messages: Sequence[Message]) -> list[Message]:
    return [m for m in messages if m.role == "user" and (m.content or "").startswith(REPAIR_LEAD)]


# --- structured output -----------------------------------------------------------------------


async def test_a_valid_answer_the_first_time_is_the_results_data() -> None:
    model = ScriptedModel(
        [
            reply(None, call("lookup", {"city": "Paris"})),
            reply('Here it is:\n```json\n{"city": "Paris", "celsius": 21,}\n```'),
        ]
    )
    events, result = await run(model, output_type=Report)
    assert result.termination == "final_answer"
    assert result.data == Report(city="Paris", celsius=21)
    assert result.output_valid is True
    assert result.output_errors == ()
    assert repairs(result.messages) == []
    assert [c.passed for c in checks(events, "output_type")] == [True]
    finished = events[-1]
    assert finished.type == "run_finished"
    assert finished.payload.output_valid is True
    # the model was told the type in its system prompt
    system = model.requests[0].messages[0].content or ""
    assert "'Report'" in system
    assert '"celsius"' in system


async def test_structured_output_repairs_twice_then_gives_up_gracefully() -> None:
    answers = iter(
        [
            '{"city": "Paris"}',
            '{"city": "Paris", "celsius": "warm"}',
            'I think it is {"city": "Paris", "celsius": "quite warm"}',
        ]
    )
    model = FunctionModel(lambda request: next(answers))
    events, result = await run(model, tools=(), output_type=Report)
    assert result.termination == "final_answer"
    assert result.complete
    assert result.output_valid is False
    assert result.data == {"city": "Paris", "celsius": "quite warm"}  # the partial content
    assert result.output_errors
    assert "celsius" in result.output_errors[0]
    assert result.output == 'I think it is {"city": "Paris", "celsius": "quite warm"}'
    asked = repairs(result.messages)
    assert len(asked) == 2
    assert "$.celsius: Field required" in (asked[0].content or "")
    assert "$.celsius" in (asked[1].content or "")
    assert len(model.requests) == 3
    # each repair request was the last thing the model saw
    assert model.requests[1].messages[-1] == asked[0]
    assert model.requests[2].messages[-1] == asked[1]
    assert [c.repair for c in checks(events, "output_type")] == [True, True, False]
    finals = [e.payload.final for e in events if e.type == "agent_message"]
    assert finals == [False, False, True]
    assert events[-1].payload.output_valid is False
    assert events[-1].payload.output_errors == result.output_errors


async def test_an_answer_with_no_json_at_all_is_repaired_too() -> None:
    model = ScriptedModel(["It is sunny.", '{"city": "Paris", "celsius": 24.5}'])
    _, result = await run(model, tools=(), output_type=Report)
    assert result.data == Report(city="Paris", celsius=24.5)
    assert "no JSON value" in (repairs(result.messages)[0].content or "")


async def test_a_json_schema_output_type_gives_plain_json() -> None:
    model = ScriptedModel(['{"city": "Oslo", "celsius": -3}'])
    _, result = await run(model, tools=(), output_type=WEATHER_SCHEMA)
    assert result.data == {"city": "Oslo", "celsius": -3}
    assert result.output_valid is True


async def test_without_an_output_type_nothing_is_checked() -> None:
    model = ScriptedModel(["sunny"])
    events, result = await run(model, tools=())
    assert (result.data, result.output_valid) == (None, None)
    assert checks(events, "output_type") == []
    assert "output_valid" not in payload_to_dict(events[-1].payload)
    assert model.requests[0].settings.response_format is None
    assert model.requests[0].messages[0].content == AgentSpec().instructions


async def test_a_stopped_runs_report_is_read_as_the_output_type() -> None:
    def answer(request: ModelRequest) -> Message:
        if request.tools:
            return reply(None, call("lookup", {"city": "Paris"}))
        return reply('{"city": "Paris", "celsius": 21}')

    events, result = await run(
        FunctionModel(answer), output_type=Report, limits=Limits(max_steps=2)
    )
    assert result.termination == "max_steps"
    assert result.detail == "it used all 2 of its steps"
    assert result.data == Report(city="Paris", celsius=21)
    assert result.output_valid is True
    wrap_up = next(m for m in reversed(result.messages) if m.role == "user")
    assert "one JSON value of type 'Report'" in (wrap_up.content or "")
    assert events[-1].payload.detail == "it used all 2 of its steps"


async def test_a_stopped_runs_report_that_does_not_fit_is_not_repaired() -> None:
    def answer(request: ModelRequest) -> Message:
        if request.tools:
            return reply(None, call("lookup", {"city": "Paris"}))
        return reply("I ran out of steps before finding the temperature.")

    _, result = await run(FunctionModel(answer), output_type=Report, limits=Limits(max_steps=1))
    assert result.termination == "max_steps"
    assert result.output_valid is False
    assert result.data is None
    assert result.output_errors
    assert repairs(result.messages) == []


# --- native structured output ----------------------------------------------------------------


def formats(model: FunctionModel) -> list[str | None]:
    return [
        r.settings.response_format.name if r.settings.response_format else None
        for r in model.requests
    ]


async def test_an_agent_without_tools_asks_for_its_schema_natively_on_every_turn() -> None:
    answers = iter(['{"city": "Paris"}', '{"city": "Paris", "celsius": 21}'])
    model = FunctionModel(lambda request: next(answers))
    await run(model, tools=(), output_type=Report)
    assert formats(model) == ["Report", "Report"]
    sent = model.requests[0].settings.response_format
    assert sent is not None
    assert sent.schema["required"] == ["city", "celsius"]


async def test_turns_with_tools_do_not_ask_for_the_schema_the_wrap_up_does() -> None:
    def answer(request: ModelRequest) -> Message:
        if request.tools:
            return reply(None, call("lookup", {"city": "Paris"}))
        return reply('{"city": "Paris", "celsius": 21}')

    model = FunctionModel(answer)
    await run(model, output_type=Report, limits=Limits(max_steps=2))
    assert [bool(r.tools) for r in model.requests] == [True, True, False]
    assert formats(model) == [None, None, "Report"]


async def test_plan_execute_asks_for_the_schema_only_for_the_final_answer() -> None:
    def answer(request: ModelRequest) -> str:
        text = request.messages[-1].content or ""
        if text.startswith("Make a plan"):
            return json.dumps({"steps": [{"description": "look it up"}]})
        if text.startswith("Plan step"):
            return "Paris has 21 degrees."
        return '{"city": "Paris", "celsius": 21}'

    model = FunctionModel(answer)
    _, result = await run(model, output_type=Report, strategy="plan_execute")
    assert result.data == Report(city="Paris", celsius=21)
    assert formats(model) == [None, None, "Report"]


# --- completion checks -----------------------------------------------------------------------


async def test_a_verifier_that_fails_twice_then_passes() -> None:
    seen: list[str] = []

    def verifier(answer: str, ctx: VerifyContext) -> bool | str:
        seen.append(answer)
        if len(seen) < 3:
            return f"attempt {len(seen)}: the answer must mention the humidity"
        return True

    model = ScriptedModel(
        [
            reply("It is 21 degrees."),
            reply(None, call("lookup", {"city": "Paris"})),
            reply("21 degrees, humid."),
            reply("21 degrees and 80% humidity."),
        ]
    )
    events, result = await run(model, verifier=verifier)
    assert result.termination == "final_answer"
    assert result.output == "21 degrees and 80% humidity."
    assert seen == ["It is 21 degrees.", "21 degrees, humid.", "21 degrees and 80% humidity."]
    verdicts = checks(events, "verifier")
    assert [v.passed for v in verdicts] == [False, False, True]
    # the failure went back to the model, and it went on working (a tool call)
    told = [m.content or "" for m in result.messages if m.role == "user"][1:]
    assert len(told) == 2
    assert "attempt 1: the answer must mention the humidity" in told[0]
    assert "did not pass the completion check" in told[0]
    assert model.requests[1].messages[-1].content == told[0]
    assert [c.passed for c in checks(events, "output_type")] == []


async def test_a_verifier_gets_the_run_and_the_conversation() -> None:
    contexts: list[VerifyContext] = []

    async def verifier(answer: str, ctx: VerifyContext) -> VerifyResult:
        contexts.append(ctx)
        return VerifyResult(passed=True)

    _, result = await run(ScriptedModel(["done"]), tools=(), verifier=verifier)
    assert result.ok
    (ctx,) = contexts
    assert (ctx.run_id, ctx.step) == ("run_t", 1)
    assert ctx.messages[-1].content == "done"


async def test_a_verifier_that_never_passes_is_bounded_by_the_steps() -> None:
    model = FunctionModel(lambda request: "done" if request.tools else "report: not verified")
    events, result = await run(
        model, verifier=lambda answer, ctx: False, limits=Limits(max_steps=3)
    )
    assert result.termination == "max_steps"
    assert result.output == "report: not verified"
    assert len(checks(events, "verifier")) == 3


async def test_a_verifier_that_crashes_is_a_failed_check_not_a_crashed_run() -> None:
    calls: list[int] = []

    def verifier(answer: str, ctx: VerifyContext) -> bool:
        calls.append(1)
        if len(calls) == 1:
            raise KeyError("boom")
        return True

    events, result = await run(ScriptedModel(["a", "b"]), tools=(), verifier=verifier)
    assert result.output == "b"
    first = checks(events, "verifier")[0]
    assert first.passed is False
    assert "KeyError" in (first.error or "")
    assert "could not be checked" in (result.messages[3].content or "")


async def test_the_verifier_checks_only_an_answer_of_the_right_type() -> None:
    checked: list[str] = []

    def verifier(answer: str, ctx: VerifyContext) -> bool:
        checked.append(answer)
        return True

    model = ScriptedModel(["sunny", '{"city": "Paris", "celsius": 21}'])
    _, result = await run(model, tools=(), output_type=Report, verifier=verifier)
    assert checked == ['{"city": "Paris", "celsius": 21}']
    assert result.output_valid is True
