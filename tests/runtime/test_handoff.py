"""Handoffs in the durable runtime: a triage agent hands the conversation to billing."""

import sys
from pathlib import Path

from harness import Agent, Harness, Message, tool
from harness.core.events import Handoff, RunStarted, ToolCompleted, payloads
from harness.runtime import Settings
from harness.testing import FunctionModel, ScriptedModel, call, reply

sys.path.insert(0, str(Path(__file__).parent / "processes"))
import kill_agents
from owner_process import OwnerProcess

TASK = "I was charged twice for order 42."
TRIAGE_PROMPT = "You are triage. Route the customer to the right team."
BILLING_PROMPT = "You are billing. Resolve charges and refunds."


@tool(side_effects="none")
def refund_status(order: int) -> str:
    """Look up the refund status of an order."""
    return f"order {order}: refund pending"


@tool(side_effects="mutating")
def escalate(note: str) -> str:
    """Escalate to a human (not safe to repeat)."""
    return "escalated"


def billing(model: ScriptedModel, **fields: object) -> Agent:
    return Agent(
        name="billing",
        description="Charges, refunds and invoices.",
        instructions=BILLING_PROMPT,
        model=model,
        tools=[refund_status],
        **fields,  # type: ignore[arg-type]
    )


def triage(model: ScriptedModel, target: Agent | str, **fields: object) -> Agent:
    return Agent(
        name="triage",
        instructions=TRIAGE_PROMPT,
        model=model,
        tools=[escalate],
        handoffs=[target],
        **fields,  # type: ignore[arg-type]
    )


def transfer(reason: str | None = "a double charge", *, id: str = "h1") -> Message:
    arguments = {} if reason is None else {"reason": reason}
    return reply(None, call("transfer_to_billing", arguments, id=id))


async def test_triage_hands_over_and_billing_answers(tmp_path: Path) -> None:
    first = ScriptedModel([transfer()])
    second = ScriptedModel(
        [reply(None, call("refund_status", {"order": 42}, id="r1")), "Refund is pending."]
    )
    agent = triage(first, billing(second))
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, TASK)
        record = await h.get(result.run_id)
        events = [e async for e in h.events(result.run_id)]
        stored = await h.messages(result.run_id)
    assert result.output == "Refund is pending."
    assert record.agent == "billing"
    assert record.model == "scripted"
    assert record.metadata["handoffs"] == 1
    [handoff] = payloads(events, Handoff)
    assert handoff == Handoff(
        step=1,
        call_id="h1",
        from_agent="triage",
        to_agent="billing",
        reason="a double charge",
        count=1,
    )
    started = payloads(events, RunStarted)
    assert [(p.agent, p.tools) for p in started] == [
        ("triage", ("escalate", "read_result", "transfer_to_billing")),
        ("billing", ("refund_status", "read_result")),
    ]
    # The triage model saw its tools and the handoff tool, described by billing.
    offered = {t.name: t for t in first.requests[0].tools}
    assert offered["transfer_to_billing"].description.startswith(
        "Hand the conversation over to the billing agent: Charges, refunds and invoices."
    )
    # Billing's first request: its own instructions, then the conversation as it was.
    sent = second.requests[0].messages
    assert [(m.role, m.content) for m in sent] == [
        ("system", BILLING_PROMPT),
        ("user", TASK),
        ("assistant", None),
        (
            "tool",
            "Handed the conversation over to the billing agent, which continues from here.",
        ),
    ]
    assert [c.id for c in sent[2].tool_calls] == ["h1"]
    assert "transfer_to_billing" not in {t.name for t in second.requests[0].tools}
    # The store keeps the handoff's system message where it was written.
    assert [m.role for m in stored] == [
        "system",
        "user",
        "assistant",
        "tool",
        "system",
        "assistant",
        "tool",
        "assistant",
    ]
    assert stored[4].content == BILLING_PROMPT
    # Steps and usage carried on in the same run.
    assert result.usage.requests == 3
    assert [p.call_id for p in payloads(events, ToolCompleted) if p.ok] == ["h1", "r1"]


async def test_a_run_killed_after_its_handoff_goes_on_as_the_new_agent(
    tmp_path: Path, store_target: str
) -> None:
    with OwnerProcess(tmp_path, store_target, "triage", TASK) as first:
        run_id = first.run_id
        assert run_id is not None
        assert first.line() == "in billing"  # the handoff committed; billing's model waits
        first.kill()
    billing_model = FunctionModel(lambda request: reply("Refund issued."))
    triage_model = FunctionModel(lambda request: reply("triage again"))
    billing_agent = Agent(
        name="billing", instructions=kill_agents.BILLING_PROMPT, model=billing_model
    )
    agent = kill_agents.triage(billing_agent, triage_model)
    async with Harness(Settings(home=tmp_path), store=store_target, agents=(agent,)) as h:
        result = await h.wait(run_id, timeout=30)
        record = await h.get(run_id)
        events = [e async for e in h.events(run_id)]
        costs = await h.store.list_runs(agent="billing")
    assert result.output == "Refund issued."
    assert record.agent == "billing"
    assert [r.run_id for r in costs] == [run_id]
    assert triage_model.requests == []  # the taken-over run never went back to triage
    assert [e.type for e in events if e.type in ("handoff", "run_recovered", "run_started")] == [
        "run_started",
        "handoff",  # billing's own run_started had not committed when the process died
        "run_recovered",
        "run_started",
    ]
    assert [p.agent for p in payloads(events, RunStarted)] == ["triage", "billing"]
    [sent] = [r.messages for r in billing_model.requests]
    assert [(m.role, m.content) for m in sent] == [
        ("system", kill_agents.BILLING_PROMPT),
        ("user", TASK),
        ("assistant", None),
        (
            "tool",
            "Handed the conversation over to the billing agent, which continues from here.",
        ),
    ]
    assert len(payloads(events, Handoff)) == 1
