"""Agents working together on Temporal as they do embedded: a handoff, agents as tools
(child runs), messages between runs. Real dev server, real SQLite; the only fakes are the
models.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from pathlib import Path

import pytest

from harness import Agent, Harness, Message, ModelRequest, tool
from harness.core.events import (
    ChildFinished,
    ChildStarted,
    Handoff,
    MessageReceived,
    MessageSent,
    RunCancelled,
    RunPaused,
    RunStarted,
    RunWaiting,
    ToolCompleted,
    WaitEnded,
    payloads,
)
from harness.core.states import RunState
from harness.runtime import Settings
from harness.runtime.child_limits import ChildLimits
from harness.runtime.children import child_run_id, run_tree
from harness.runtime.runtime_settings import RuntimeSettings
from harness.testing import FunctionModel, ScriptedModel, call, reply

sys.path.insert(0, str(Path(__file__).parents[1] / "runtime" / "processes"))
import tree_agents

sys.path.insert(0, str(Path(__file__).parents[2] / "examples"))
import conversation

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


async def test_a_supervisor_with_two_researcher_children_as_embedded(
    tmp_path: Path, temporal_address: str, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tree_agents, "FAN_OUT", 2)
    monkeypatch.setattr(tree_agents, "LEDGER", tmp_path / "ledger")
    async with Harness(Settings(home=tmp_path / "embedded")) as h:
        expected = await h.wait(await h.submit(tree_agents.supervisor(), "survey"), timeout=30)
        embedded_events = await h.store.events(expected.run_id)
        embedded_parent = await h.get(expected.run_id)
        embedded_tree = (await run_tree(h, expected.run_id)).to_dict()
    async with Harness(temporal(tmp_path / "temporal", temporal_address, task_queue)) as h:
        run_id = await h.submit(tree_agents.supervisor(), "survey")
        result = await h.wait(run_id, timeout=60)
        events = await h.store.events(run_id)
        parent = await h.get(run_id)
        children = await h.store.list_runs(parent_run_id=run_id, limit=None)
        tree = (await run_tree(h, run_id)).to_dict()
        child_events = [await h.store.events(c.run_id) for c in children]
    assert result.output == expected.output == "found survey/topic-0 | found survey/topic-1"
    assert sorted(c.run_id for c in children) == sorted(
        child_run_id(run_id, f"fan-{i}") for i in range(2)
    )
    assert {(c.state, c.depth, c.root_run_id, c.agent, c.engine) for c in children} == {
        (RunState.COMPLETED, 1, run_id, "researcher", "temporal")
    }
    # The parent's events: those of the embedded run (two children in parallel: their
    # started/waiting/finished events interleave as they happen, so compared as sets).
    assert sorted(e.type for e in events) == sorted(e.type for e in embedded_events)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert sorted(p.call_id for p in payloads(events, ChildStarted)) == ["fan-0", "fan-1"]
    assert {(p.state, p.usage) for p in payloads(events, ChildFinished)} == {
        (p.state, p.usage) for p in payloads(embedded_events, ChildFinished)
    }
    for own in child_events:
        assert [e.seq for e in own] == list(range(1, len(own) + 1))
        assert own[-1].type == "run_finished"
    # Usage rolls up as embedded: its own, and its children's apart.
    assert (parent.usage, parent.children_usage) == (
        embedded_parent.usage,
        embedded_parent.children_usage,
    )
    assert parent.children_usage.cost_usd == 2 * 2 * tree_agents.RESEARCHER_REPLY_USD

    def shape(node: dict[str, object]) -> object:
        kids = sorted(shape(c) for c in node["children"])  # type: ignore[union-attr]
        return (node["agent"], node["state"], node["depth"], node["steps"], tuple(kids))

    assert shape(tree) == shape(embedded_tree)
    assert sorted((tmp_path / "ledger").read_text().splitlines()) == [
        "survey/topic-0",
        "survey/topic-0",
        "survey/topic-1",
        "survey/topic-1",
    ]  # once per backend


async def test_parallel_agent_calls_count_each_other_s_children_as_embedded(
    tmp_path: Path, temporal_address: str, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three calls at once, room for two: one is refused, on both backends alike."""
    monkeypatch.setattr(tree_agents, "FAN_OUT", 3)
    monkeypatch.setattr(tree_agents, "LEDGER", tmp_path / "ledger")
    limits = ChildLimits(max_children=2)
    outcomes: dict[str, tuple[int, list[bool]]] = {}
    for backend, settings in (
        ("embedded", Settings(home=tmp_path / "embedded", children=limits)),
        ("temporal", temporal(tmp_path / "temporal", temporal_address, task_queue)),
    ):
        settings = dataclasses.replace(settings, children=limits)
        async with Harness(settings) as h:
            run_id = await h.submit(tree_agents.supervisor(), "survey")
            await h.wait(run_id, timeout=60)
            children = await h.store.list_runs(parent_run_id=run_id, limit=None)
            done = payloads(await h.store.events(run_id), ToolCompleted)
        refused = [not d.ok and "max_children" in (d.result or "") for d in done]
        outcomes[backend] = (len(children), sorted(refused))
    assert outcomes["temporal"] == outcomes["embedded"] == (2, [False, False, True])


async def test_a_cancelled_parent_cancels_the_child_it_waits_for(
    tmp_path: Path, temporal_address: str, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tree_agents, "FAN_OUT", 1)
    monkeypatch.setenv("HARNESS_TEMPORAL_HEARTBEAT_S", "1")
    slow = Agent(
        name="researcher",
        model=FunctionModel(lambda request: reply("too late"), latency_s=60),
    )
    async with Harness(temporal(tmp_path, temporal_address, task_queue)) as h:
        run_id = await h.submit(tree_agents.supervisor(slow), "survey")
        child_id = child_run_id(run_id, "fan-0")
        async with asyncio.timeout(30):
            while (await h.store.get_run(child_id)) is None or (
                await h.get(run_id)
            ).state != RunState.WAITING_TOOL:
                await asyncio.sleep(0.05)
        await state_of(h, child_id, RunState.RUNNING)
        await h.cancel(run_id, reason="enough")
        await state_of(h, run_id, RunState.CANCELLED)
        await state_of(h, child_id, RunState.CANCELLED)
        [cancelled] = payloads(await h.store.events(child_id), RunCancelled)
        parent_events = await h.store.events(run_id)
    assert cancelled == RunCancelled(
        by=f"run:{run_id}", reason=f"its parent {run_id} was cancelled"
    )
    assert parent_events[-1].type == "run_cancelled"
    assert [e.seq for e in parent_events] == list(range(1, len(parent_events) + 1))


async def state_of(h: Harness, run_id: str, *states: str, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while (await h.get(run_id)).state not in states:
            await asyncio.sleep(0.05)


async def test_the_conversation_examples_agents_talk_on_temporal(
    tmp_path: Path, temporal_address: str, task_queue: str
) -> None:
    reviewer, planner = conversation.agents(None)
    settings = temporal(tmp_path, temporal_address, task_queue)
    async with Harness(settings, agents=(reviewer, planner)) as h:
        reviewer_id = await h.submit(reviewer, "Review the plans other agents send you.")
        planner_id = await h.submit(planner, f"Plan a database change; ask {reviewer_id}")
        planned = await h.wait(planner_id, timeout=90)
        reviewed = await h.wait(reviewer_id, timeout=90)
        events = {run: await h.store.events(run) for run in (planner_id, reviewer_id)}
        histories = {run: await h.store.messages(run) for run in (planner_id, reviewer_id)}
        unread = [await h.store.inbox(run) for run in (planner_id, reviewer_id)]
    assert planned.output.startswith("Plan revised after the review ('Good plan;")
    assert reviewed.output == f"Reviewed the plan of {planner_id}."
    for run, other in ((planner_id, reviewer_id), (reviewer_id, planner_id)):
        [sent] = payloads(events[run], MessageSent)
        [received] = payloads(events[run], MessageReceived)
        assert (sent.to_run, received.sender_run) == (other, other)
        assert [e.seq for e in events[run]] == list(range(1, len(events[run]) + 1))
        # The message is in the reader's history exactly once, and no longer unread.
        heard = [m for m in histories[run] if f"[message from {other}" in (m.content or "")]
        assert len(heard) == 1
    assert unread == [[], []]


async def test_an_embedded_run_s_message_wakes_a_temporal_run_that_waits(
    tmp_path: Path, temporal_address: str, task_queue: str
) -> None:
    """The planner runs embedded, the reviewer on Temporal, in one store: the planner's
    `send_message` only writes to the store (no Temporal client), and a Temporal worker
    relays it to the reviewer's workflow, which wakes long before its 60 s deadline."""
    reviewer, planner = conversation.agents(None)
    on_temporal = temporal(tmp_path, temporal_address, task_queue)
    async with (
        Harness(on_temporal, agents=(reviewer,)) as t,
        Harness(Settings(home=tmp_path), agents=(planner,)) as e,
    ):
        reviewer_id = await t.submit(reviewer, "Review the plans other agents send you.")
        await state_of(t, reviewer_id, RunState.WAITING_TOOL)
        planner_id = await e.submit(planner, f"Plan a database change; ask {reviewer_id}")
        reviewed = await t.wait(reviewer_id, timeout=30)
        planned = await e.wait(planner_id, timeout=30)
        events = await t.store.events(reviewer_id)
        engines = [(await t.get(run)).engine for run in (reviewer_id, planner_id)]
        left = await t.store.take_controls(run_id=reviewer_id)  # the relay took its mail
    assert engines == ["temporal", "embedded"]
    assert left == []
    assert reviewed.output == f"Reviewed the plan of {planner_id}."
    assert planned.output.startswith("Plan revised after the review ('Good plan;")
    [ended] = payloads(events, WaitEnded)
    assert ended.waited_s < 30  # woken by the relayed message, not by its deadline
    [received] = payloads(events, MessageReceived)
    assert received.sender_run == planner_id


async def test_harness_send_wakes_a_run_waiting_for_a_message(
    tmp_path: Path, temporal_address: str, task_queue: str
) -> None:
    reviewer, _ = conversation.agents(None)
    async with Harness(temporal(tmp_path, temporal_address, task_queue)) as h:
        run_id = await h.submit(reviewer, "Review the plans other agents send you.")
        async with asyncio.timeout(30):
            while not payloads(await h.store.events(run_id), RunWaiting):
                await asyncio.sleep(0.05)
        assert (await h.get(run_id)).state == RunState.WAITING_TOOL
        await h.send(run_id, "a plan from run_abc (agent x): nothing")
        result = await h.wait(run_id, timeout=60)
        events = await h.store.events(run_id)
        [received] = payloads(events, MessageReceived)
        history = await h.store.messages(run_id)
    # The scripted reviewer answers a message of no run by waiting's end: it read it once.
    assert (received.sender, received.sender_run) == ("user", None)
    assert sum("[message from user]" in (m.content or "") for m in history) == 1
    assert result.output == "No plan came."  # the scripted reviewer answers runs only
    [ended] = payloads(events, WaitEnded)
    assert ended.waited_s < 30  # woken by the message, not by its 60 s deadline


@tool(side_effects="none")
def look(topic: str) -> str:
    """Look a topic up."""
    return f"notes on {topic}"


def _slow_researcher(request: ModelRequest) -> Message:
    if not any(m.role == "tool" for m in request.messages):
        return reply(None, call("look", {"topic": "x"}))
    return reply("found it")


@pytest.mark.parametrize("mail_first", [False, True], ids=["no-mail", "mail-read-first"])
async def test_a_parent_paused_while_it_waits_pauses_its_child_and_both_resume(
    tmp_path: Path,
    temporal_address: str,
    task_queue: str,
    monkeypatch: pytest.MonkeyPatch,
    mail_first: bool,
) -> None:
    """With `mail_first`, the parent reads a message before it calls its child: reading
    mail must not make the workflow forget the child it started (it would start it again
    on resume, and fail)."""
    monkeypatch.setattr(tree_agents, "FAN_OUT", 1)
    slow = Agent(
        name="researcher", model=FunctionModel(_slow_researcher, latency_s=1.5), tools=[look]
    )
    async with Harness(temporal(tmp_path, temporal_address, task_queue)) as h:
        run_id = await h.submit(tree_agents.supervisor(slow), "survey")
        if mail_first:
            await h.send(run_id, "a note before you start")
        child_id = child_run_id(run_id, "fan-0")
        await state_of(h, run_id, RunState.WAITING_TOOL)
        await h.pause(run_id)
        await state_of(h, run_id, RunState.PAUSED)
        await state_of(h, child_id, RunState.PAUSED)  # at its next step boundary
        [paused] = payloads(await h.store.events(run_id), RunPaused)
        await h.resume(run_id)
        result = await h.wait(run_id, timeout=60)
        child = await h.get(child_id)
        events = await h.store.events(run_id)
        child_events = await h.store.events(child_id)
    assert paused.at == "wait"
    assert result.output == "found it"
    assert child.state == RunState.COMPLETED
    assert [p.existed for p in payloads(events, ChildStarted)] == [False, True]
    assert [e.type for e in child_events].count("run_resumed") == 1
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert len(payloads(events, MessageReceived)) == int(mail_first)


async def test_a_pause_ends_a_wait_for_a_message_and_the_wait_goes_on_after_resume(
    tmp_path: Path, temporal_address: str, task_queue: str
) -> None:
    reviewer, _ = conversation.agents(None)
    async with Harness(temporal(tmp_path, temporal_address, task_queue)) as h:
        run_id = await h.submit(reviewer, "Review the plans other agents send you.")
        await state_of(h, run_id, RunState.WAITING_TOOL)
        await h.pause(run_id)
        await state_of(h, run_id, RunState.PAUSED)
        await h.resume(run_id)
        async with asyncio.timeout(30):  # waiting again, for the same call
            while len(payloads(await h.store.events(run_id), RunWaiting)) < 2:
                await asyncio.sleep(0.05)
        await h.send(run_id, "hello")
        result = await h.wait(run_id, timeout=60)
        events = await h.store.events(run_id)
        history = await h.store.messages(run_id)
    [paused] = payloads(events, RunPaused)
    assert paused.at == "wait"
    assert result.output == "No plan came."
    assert len(payloads(events, MessageReceived)) == 1
    assert sum("[message from user]: hello" in (m.content or "") for m in history) == 1


def _reviews_the_task(request: ModelRequest) -> Message:
    task = next(m.content or "" for m in request.messages if m.role == "user")
    return reply(f"reviewed: {task}")


async def test_a_trigger_starts_its_run_on_temporal_exactly_once(
    tmp_path: Path, temporal_address: str, task_queue: str
) -> None:
    coder = Agent(name="coder", model=ScriptedModel(["fixed it"]), instructions="Code.")
    reviewer = Agent(
        name="reviewer", model=FunctionModel(_reviews_the_task), instructions="Review."
    )
    runtime = RuntimeSettings(
        backend="temporal", temporal_address=temporal_address, task_queue=task_queue
    )
    async with Harness(Settings(home=tmp_path, runtime=runtime), agents=(coder, reviewer)) as h:
        h.on("run_finished", {"agent": "coder"}, start="reviewer", task="review: {result}")
        coded = await h.wait(await h.submit("coder", "fix the bug"), timeout=60)
        async with asyncio.timeout(60):
            while not (reviews := await h.store.list_runs(agent="reviewer", limit=None)) or (
                reviews[0].finished_at is None
            ):
                await asyncio.sleep(0.1)
        review = await h.wait(reviews[0].run_id, timeout=60)
        events = await h.store.events(review.run_id)
        await asyncio.sleep(0.5)  # a second firing would have made a second run by now
        again = await h.store.list_runs(agent="reviewer", limit=None)
    assert coded.output == "fixed it"
    assert len(again) == 1
    assert again[0].engine == "temporal"
    assert review.output == "reviewed: review: fixed it"
    assert [e.type for e in events][:2] == ["run_submitted", "trigger_fired"]
