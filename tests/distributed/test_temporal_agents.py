"""Agents working together on Temporal as they do embedded: a handoff, agents as tools
(child runs), messages between runs. Real dev server, real SQLite; the only fakes are the
models.
"""

from __future__ import annotations

from pathlib import Path

from harness import Agent, Harness, Message, tool
from harness.core.events import Handoff, RunStarted, payloads
from harness.core.states import RunState
from harness.runtime import Settings
from harness.runtime.runtime_settings import RuntimeSettings
from harness.testing import ScriptedModel, call, reply

TASK = "I was charged twice for order 42."


def temporal(home: Path, address: str, queue: str) -> Settings:
    runtime = RuntimeSettings(backend="temporal", temporal_address=address, task_queue=queue)
    return Settings(home=home, runtime=runtime)


@tool(side_effects="none")
def refund_status(order: int) -> str:
    """Look up the refund status of an order."""
    return f"order {order}: refund pending"


def triage() -> Agent:
    billing = Agent(
        name="billing",
        description="Charges, refunds and invoices.",
        instructions="You are billing.",
        model=ScriptedModel(
            [reply(None, call("refund_status", {"order": 42}, id="r1")), "Refund is pending."]
        ),
        tools=[refund_status],
    )
    first: list[Message | str] = [
        reply(None, call("transfer_to_billing", {"reason": "a double charge"}, id="h1"))
    ]
    return Agent(
        name="triage",
        instructions="You are triage.",
        model=ScriptedModel(first),
        handoffs=[billing],
    )


async def test_triage_hands_over_to_billing_as_embedded(
    tmp_path: Path, temporal_address: str, task_queue: str
) -> None:
    async with Harness(Settings(home=tmp_path / "embedded")) as h:
        expected = await h.wait(await h.submit(triage(), TASK), timeout=30)
        embedded_events = await h.store.events(expected.run_id)
        embedded_messages = await h.store.messages(expected.run_id)
        embedded_row = await h.get(expected.run_id)
    async with Harness(temporal(tmp_path / "temporal", temporal_address, task_queue)) as h:
        run_id = await h.submit(triage(), TASK)
        result = await h.wait(run_id, timeout=60)
        events = await h.store.events(run_id)
        messages = await h.store.messages(run_id)
        row = await h.get(run_id)
    assert (result.output, result.termination, result.usage) == (
        expected.output,
        expected.termination,
        expected.usage,
    )
    assert result.output == "Refund is pending."
    assert [e.type for e in events] == [e.type for e in embedded_events]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert payloads(events, Handoff) == payloads(embedded_events, Handoff)
    started = [(p.agent, p.model, p.tools) for p in payloads(events, RunStarted)]
    assert started == [(p.agent, p.model, p.tools) for p in payloads(embedded_events, RunStarted)]
    assert [agent for agent, _, _ in started] == ["triage", "billing"]
    assert [(m.role, m.content, m.tool_calls) for m in messages] == [
        (m.role, m.content, m.tool_calls) for m in embedded_messages
    ]
    # `harness runs show` reads the row: it names the agent the run was handed to.
    assert (row.agent, row.model, row.state) == ("billing", "scripted", RunState.COMPLETED)
    assert row.metadata["handoffs"] == embedded_row.metadata["handoffs"] == 1
    assert "overrides" not in row.metadata
