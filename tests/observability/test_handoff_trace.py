"""A run handed over from one agent to another, as a trace: the handoff is an event on its
step, and the run span names the agent the run went on under."""

from pathlib import Path

from harness import Agent, Harness
from harness.observability import TraceBuilder
from harness.runtime import Settings
from harness.testing import ScriptedModel, call, reply


async def test_a_handoff_is_an_event_of_its_step_and_names_the_new_agent(
    tmp_path: Path,
) -> None:
    billing = Agent(name="billing", model=ScriptedModel(["Refunded."]))
    triage = Agent(
        name="triage",
        model=ScriptedModel([reply(None, call("transfer_to_billing", {"reason": "r"}))]),
        handoffs=[billing],
    )
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(triage, "refund me")
        events = [e async for e in h.events(result.run_id)]
    for capture in (False, True):
        builder = TraceBuilder(result.run_id, capture_content=capture)
        spans = [span for event in events for span in builder.feed(event)]
        assert builder.ended
        [step] = [s for s in spans if s.name == "step 1"]
        [handoff] = [e for e in step.events if e.name == "handoff"]
        expected = {
            "harness.handoff.from": "triage",
            "harness.handoff.to": "billing",
            "harness.handoff.count": 1,
        }
        if capture:
            expected["harness.handoff.reason"] = "r"
        assert dict(handoff.attributes) == expected
        [run] = [s for s in spans if s.parent_id is None]
        assert run.name == "invoke_agent triage"
        assert (run.attributes["harness.agent"], run.attributes["harness.handoffs"]) == (
            "billing",
            1,
        )
        tools = [s.name for s in spans if s.name.startswith("execute_tool")]
        assert tools == ["execute_tool transfer_to_billing"]
