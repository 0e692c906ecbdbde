"""Plan-and-Execute in the durable runtime: its events are stored, and it survives a SIGKILL."""

import json
import sys
from pathlib import Path

from harness import Agent, Harness, Limits, Message, ModelRequest, tool
from harness.core.events import PlanCreated, payloads
from harness.runtime import Settings
from harness.testing import FunctionModel, call, reply

sys.path.insert(0, str(Path(__file__).parents[1] / "runtime" / "processes"))
from owner_process import OwnerProcess


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def plan(*steps: str) -> str:
    return json.dumps({"steps": [{"description": s} for s in steps]})


class PlanModel:
    """Answers from the conversation alone (the killed process's `planner` does the same)."""

    async def __call__(self, request: ModelRequest) -> Message | str:
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


def agent(model: PlanModel) -> Agent:
    return Agent(
        name="planner",
        model=FunctionModel(model),
        tools=[add],
        strategy="plan_execute",
        limits=Limits(max_steps=20),
    )


async def test_plan_events_are_stored_with_the_run(tmp_path: Path) -> None:
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent(PlanModel()), "what is (2+3)*2?")
        events = [e async for e in h.events(result.run_id)]
    assert result.output == "The answer is 10."
    created = payloads(events, PlanCreated)
    assert [p.steps for p in created] == [("add 2 and 3", "double the sum")]
    assert next(e for e in events if e.type == "run_started").payload.strategy == "plan_execute"


async def test_a_plan_goes_on_after_its_process_is_killed_mid_step(
    tmp_path: Path, store_target: str
) -> None:
    with OwnerProcess(tmp_path, store_target, "planner", "what is (2+3)*2?") as first:
        run_id = first.run_id
        assert run_id is not None
        assert first.line() == "at step 2"  # plan step 2 is asked for: SIGKILL here
        first.kill()
    again = PlanModel()
    async with Harness(Settings(home=tmp_path), store=store_target, agents=(agent(again),)) as h:
        result = await h.wait(run_id, timeout=30)
        events = [e async for e in h.events(run_id)]
    assert result.output == "The answer is 10."
    assert any(e.type == "run_recovered" for e in events)
    assert sum(e.type == "plan_created" for e in events) == 1  # the plan was not made again
    plans = [m for m in result.messages if (m.content or "").startswith("Make a plan")]
    assert len(plans) == 1
    assert [m.content for m in result.messages if m.role == "tool"] == ["5", "10"]
