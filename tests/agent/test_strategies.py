"""Strategies: the registry, ReAct by default, and Plan-and-Execute with revisions and resume."""

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness import Agent
from harness.agent import AgentLoop, AgentSpec, RunControl, register_strategy, strategy_names
from harness.agent.strategies import Answer, Outcome
from harness.core import Limits, Message, RunEvent, RunResult
from harness.core.codec import payload_to_dict
from harness.errors import ConfigError, RunInterrupted, ToolError
from harness.gateway import ModelRequest
from harness.runtime.bus import EventBus, RunRecorder
from harness.runtime.runs import agent_from_metadata, agent_metadata
from harness.runtime.settings import load_settings
from harness.testing import FunctionModel, ScriptedModel, call, reply
from harness.tools import Toolset, tool


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def fetch(url: str) -> str:
    """Fetch a page (this one never works)."""
    raise ToolError(f"cannot reach {url}", hint="try another source")


def plan(*steps: str) -> str:
    body = json.dumps({"steps": [{"description": s} for s in steps]})
    return f"Here is my plan:\n```json\n{body}\n```"


def spec(model: Any, **options: Any) -> AgentSpec:
    limits = options.pop("limits", Limits())
    return AgentSpec(
        name="planner",
        model=model,
        limits=limits,
        strategy="plan_execute",
        strategy_options=options,
    )


async def run(
    agent: AgentSpec,
    messages: list[Message] | None = None,
    sink: Any = None,
    tools: Sequence[object] = (add, fetch),
) -> tuple[list[RunEvent], RunResult]:
    recorder = sink or RunRecorder("run_p", EventBus())
    model = agent.model
    assert not isinstance(model, str)
    loop = AgentLoop(agent, model=model, toolset=Toolset(list(tools)), sink=recorder)  # type: ignore[arg-type]
    history = messages if messages is not None else [Message.system("sys"), Message.user("task")]
    return recorder.events, await loop.run("run_p", history)


def of_type(events: list[RunEvent], kind: str) -> list[dict[str, Any]]:
    """The payloads of events of type `kind`, as the JSON they are stored as."""
    return [payload_to_dict(e.payload) for e in events if e.type == kind]


def assert_valid_conversation(messages: Sequence[Message]) -> None:
    open_calls: set[str] = set()
    for message in messages:
        if message.role == "tool":
            assert message.tool_call_id in open_calls
            open_calls.discard(message.tool_call_id)
        else:
            assert not open_calls
            open_calls = {c.id for c in message.tool_calls}


# --- the registry -----------------------------------------------------------------------------


class OneShot:
    """A third strategy, added without touching the loop: one turn without tools."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix

    async def run(self, run: RunControl) -> Outcome:
        run.say(f"{self.prefix}Answer in one line.")
        turn = await run.turn(tools=False)
        if turn.stop is not None:
            return turn.stop
        return await run.finish(turn.text or "") or Answer(text="")


async def test_a_third_strategy_is_one_class_and_one_registration() -> None:
    register_strategy("one_shot_test", OneShot, replace=True)
    assert "one_shot_test" in strategy_names()
    model = ScriptedModel(["forty-two"])
    agent = AgentSpec(
        model=model, strategy="one_shot_test", strategy_options={"prefix": "Please. "}
    )
    events, result = await run(agent)
    assert result.output == "forty-two"
    assert result.termination == "final_answer"
    assert model.requests[0].tools == ()
    assert model.requests[0].messages[-1].content == "Please. Answer in one line."
    assert of_type(events, "run_started")[0]["strategy"] == "one_shot_test"


def test_react_and_plan_execute_are_built_in_and_react_is_the_default() -> None:
    assert {"react", "plan_execute"} <= set(strategy_names())
    assert AgentSpec().strategy == "react"


def test_an_unknown_strategy_or_option_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"unknown strategy 'plan'.*plan_execute, react"):
        AgentSpec(strategy="plan")
    with pytest.raises(ConfigError, match="does not accept these options"):
        AgentSpec(strategy="plan_execute", strategy_options={"max_step": 3})
    with pytest.raises(ConfigError, match="max_revisions at least 0"):
        AgentSpec(strategy="plan_execute", strategy_options={"max_revisions": -1})
    with pytest.raises(ConfigError, match="already registered"):
        register_strategy("react", OneShot)


def test_the_strategy_survives_the_trip_through_the_store() -> None:
    agent = Agent(tools=["bash"], strategy="plan_execute", strategy_options={"max_revisions": 1})
    data = agent_metadata(agent)
    assert data is not None
    rebuilt = agent_from_metadata(json.loads(json.dumps(data)))
    assert rebuilt.strategy == "plan_execute"
    assert dict(rebuilt.strategy_options) == {"max_revisions": 1}
    older = {k: v for k, v in data.items() if not k.startswith("strategy")}
    assert agent_from_metadata(older).strategy == "react"  # runs stored before strategies


def test_harness_toml_chooses_the_default_strategy(tmp_path: Path) -> None:
    assert load_settings(tmp_path).default_strategy == "react"
    (tmp_path / "harness.toml").write_text('[defaults]\nstrategy = "plan_execute"\n')
    assert load_settings(tmp_path).default_strategy == "plan_execute"
    (tmp_path / "harness.toml").write_text('[defaults]\nstrategy = "planned"\n')
    with pytest.raises(ConfigError, match=r"defaults\.strategy.*unknown strategy 'planned'"):
        load_settings(tmp_path)


# --- Plan-and-Execute -------------------------------------------------------------------------


async def test_plan_and_execute_plans_then_runs_each_step_with_tools() -> None:
    model = ScriptedModel(
        [
            plan("add 2 and 3", "double the sum"),
            reply(None, call("add", {"a": 2, "b": 3}, id="c1")),
            "the sum is 5",
            reply(None, call("add", {"a": 5, "b": 5}, id="c2")),
            "doubled, it is 10",
            "The answer is 10.",
        ]
    )
    events, result = await run(spec(model))
    assert result.output == "The answer is 10."
    assert (result.termination, result.complete) == ("final_answer", True)
    assert of_type(events, "plan_created") == [
        {"step": 1, "steps": ["add 2 and 3", "double the sum"], "readable": True}
    ]
    assert not of_type(events, "plan_updated")
    with_tools = [bool(r.tools) for r in model.requests]
    assert with_tools == [False, True, True, True, True, False]  # plan and answer: no tools
    planning = model.requests[0].messages[-1].content or ""
    assert planning.startswith("Make a plan")
    assert "- add: Add two integers." in planning
    assert (model.requests[1].messages[-1].content or "").startswith("Plan step 1 of 2: add 2")
    assert (model.requests[3].messages[-1].content or "").startswith("Plan step 2 of 2: double")
    step_reports = [p["content"] for p in of_type(events, "agent_message") if not p["final"]]
    assert step_reports == ["the sum is 5", "doubled, it is 10"]
    assert_valid_conversation(result.messages)


def forever(*replies: Message) -> FunctionModel:
    """A model that gives `replies` in order, then the last one for ever."""
    given = list(replies)
    return FunctionModel(lambda request: given.pop(0) if len(given) > 1 else given[0])


async def test_calls_on_the_plan_turn_are_repeated_failures() -> None:
    model = forever(reply(None, call("add", {"a": 1, "b": 1})))
    events, result = await run(spec(model))
    assert result.termination == "repeated_failure"
    assert result.detail == (
        "your last 3 replies called tools on turns where no tool can be called, even after a hint"
    )
    assert len(model.requests) == 7  # 3 plan turns, the hint, 3 more, then the wrap-up
    assert [bool(r.tools) for r in model.requests] == [False] * 7
    told = model.requests[1].messages[-1].content
    assert told == (
        "No tool can be called on this turn, so your call of 'add' was not run. "
        "Reply with text only: what the last message asks for."
    )
    assert len(of_type(events, "hint_injected")) == 1


async def test_calls_on_the_answer_turn_are_repeated_failures() -> None:
    model = forever(
        reply(plan("add 2 and 3")),
        reply(None, call("add", {"a": 2, "b": 3})),
        reply("the sum is 5"),
        reply(None, call("add", {"a": 2, "b": 3})),  # on the final-answer turn, for ever
    )
    _, result = await run(spec(model))
    assert result.termination == "repeated_failure"
    assert len(model.requests) == 3 + 6 + 1
    told = model.requests[4].messages[-1].content
    assert told == (
        "No tool can be called on this turn, so your call of 'add' was not run. "
        "Reply with text only: your final answer."
    )


async def test_a_failing_step_makes_the_model_revise_the_plan() -> None:
    model = ScriptedModel(
        [
            plan("fetch the page", "summarise it"),
            reply(None, call("fetch", {"url": "http://example.test"})),
            "FAILED: the page cannot be reached",
            plan("add 20 and 22 instead"),
            reply(None, call("add", {"a": 20, "b": 22})),
            "the sum is 42",
            "42, computed instead of fetched.",
        ]
    )
    events, result = await run(spec(model))
    assert result.output == "42, computed instead of fetched."
    assert result.complete
    updated = of_type(events, "plan_updated")
    assert updated == [
        {
            "step": 4,
            "steps": ["add 20 and 22 instead"],
            "readable": True,
            "revision": 1,
            "failed_step": "fetch the page",
            "reason": "the page cannot be reached",
            "done": [],
        }
    ]
    revise = model.requests[3]
    assert revise.tools == ()
    assert (revise.messages[-1].content or "").startswith('Revise the plan: the step "fetch the')
    assert (model.requests[4].messages[-1].content or "").startswith("Plan step 1 of 1: add 20")
    assert_valid_conversation(result.messages)


async def test_tool_failures_that_exhaust_end_the_step_and_the_plan_is_revised() -> None:
    model = ScriptedModel(
        [
            plan("fetch the page"),
            reply(None, call("fetch", {"url": "http://a.test"})),
            reply(None, call("fetch", {"url": "http://b.test"})),  # 2nd alike: hint, step fails
            plan("add 1 and 1"),
            reply(None, call("add", {"a": 1, "b": 1})),
            "2",
            "It is 2.",
        ]
    )
    agent = spec(model, limits=Limits(max_identical_failures=2))
    events, result = await run(agent)
    assert result.output == "It is 2."
    assert len(of_type(events, "hint_injected")) == 1
    assert of_type(events, "plan_updated")[0]["reason"] == "its tool calls kept failing"


async def test_a_step_that_takes_too_many_turns_fails() -> None:
    model = ScriptedModel(
        [
            plan("count forever"),
            reply(None, call("add", {"a": 1, "b": 1})),
            reply(None, call("add", {"a": 2, "b": 1})),
            plan(),  # nothing left to try
            "I could not finish counting.",
        ]
    )
    events, result = await run(spec(model, max_step_turns=2))
    assert of_type(events, "plan_updated")[0]["reason"] == "it took 2 model turns without a result"
    assert of_type(events, "plan_updated")[0]["steps"] == []
    assert result.output == "I could not finish counting."


async def test_when_revisions_run_out_the_run_stops_with_repeated_failure() -> None:
    model = ScriptedModel(
        [
            plan("fetch a"),
            "FAILED: unreachable",
            plan("fetch b"),
            "FAILED: unreachable too",
            "Report: neither source could be reached.",
        ]
    )
    events, result = await run(spec(model, max_revisions=1))
    assert result.termination == "repeated_failure"
    assert not result.complete
    assert result.output == "Report: neither source could be reached."
    assert len(of_type(events, "plan_updated")) == 1
    assert (
        "revised 1 times and a step still failed: 'fetch b'"
        in of_type(events, "run_finished")[0]["detail"]
    )
    assert model.requests[-1].tools == ()


async def test_a_plan_is_read_leniently_and_asked_for_again_when_unreadable() -> None:
    model = ScriptedModel(
        [
            "I will just get on with it.",
            "1. add 1 and 2\n2) report the sum",
            "3",
            "the sum is 3",
            "3",
        ]
    )
    events, result = await run(spec(model))
    assert (model.requests[1].messages[-1].content or "").startswith("Your plan could not be read")
    assert of_type(events, "plan_created")[0]["steps"] == ["add 1 and 2", "report the sum"]
    assert result.output == "3"


async def test_a_model_that_never_plans_gets_the_whole_task_as_one_step() -> None:
    model = ScriptedModel(["no plan", "still no plan", "done the task", "The result."])
    events, result = await run(spec(model))
    assert of_type(events, "plan_created")[0] == {
        "step": 2,
        "steps": ["Carry out the whole task"],
        "readable": False,
    }
    assert result.output == "The result."


async def test_plan_turns_count_against_the_run_limits() -> None:
    model = ScriptedModel([plan("a", "b"), reply(None, call("add", {"a": 1, "b": 1})), "report"])
    _, result = await run(spec(model, limits=Limits(max_steps=2)))
    assert result.termination == "max_steps"
    assert result.output == "report"
    assert len(model.requests) == 3


# --- resume -----------------------------------------------------------------------------------


class InterruptingSink(RunRecorder):
    """Pauses the run at its Nth checkpoint; everything before it counts as committed."""

    def __init__(self, at: int) -> None:
        super().__init__("run_p", EventBus())
        self.at, self.seen = at, 0

    async def checkpoint(self) -> None:
        self.seen += 1
        if self.seen == self.at:
            raise RunInterrupted("pause")


def by_conversation(request: ModelRequest) -> Message | str:
    """A model that answers from the conversation alone, so it survives any restart."""
    last = request.messages[-1]
    text = last.content or ""
    if text.startswith("Make a plan"):
        return plan("add 2 and 3", "double the sum")
    if text.startswith("Plan step 1"):
        return reply(None, call("add", {"a": 2, "b": 3}))
    if text.startswith("Plan step 2"):
        return reply(None, call("add", {"a": 5, "b": 5}))
    if last.role == "tool":
        return f"got {text}"
    return "The answer is 10."


async def test_a_resumed_run_goes_on_with_its_plan() -> None:
    first = FunctionModel(by_conversation)
    sink = InterruptingSink(at=2)  # the checkpoint after step 2's tool call
    with pytest.raises(RunInterrupted):
        await run(spec(first), sink=sink)
    history = list(sink.messages)
    assert history[-1].role == "tool"  # paused in the middle of plan step 2
    history = [Message.system("sys"), Message.user("task"), *history]

    second = FunctionModel(by_conversation)
    events, result = await run(spec(second), messages=history)
    assert result.output == "The answer is 10."
    assert not of_type(events, "plan_created")  # no new plan: the stored one goes on
    resumed = [r.messages[-1].content or "" for r in second.requests]
    assert len(resumed) == 2  # step 2 goes on from its tool result, then the final answer
    assert resumed[0] == "10"
    assert resumed[1].startswith("No plan steps are left")
    contents = [m.content or "" for m in result.messages]
    assert sum(c.startswith("Make a plan") for c in contents) == 1
    assert_valid_conversation(result.messages)
