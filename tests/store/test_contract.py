"""The contract of `EventStore`: every test runs against SQLite and against PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import random
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

import pytest

from harness.core import Message, RunEvent, RunState, ToolCall, Usage
from harness.core.codec import dumps, event_from_dict, event_to_dict, loads, payload_from_dict
from harness.core.events import (
    AgentMessage,
    EventPayload,
    EventType,
    HintInjected,
    StepStarted,
    payloads,
)
from harness.errors import ConfigError
from harness.store import (
    Decision,
    EventStore,
    NewEvent,
    NewRun,
    RunUpdate,
    StepWrite,
    StoreConflict,
    StoreError,
    open_store,
)
from harness.store._schema import LATEST_VERSION

from ._group_commit import Transactions, held_writer
from .conftest import START, FakeClock

SAMPLES: dict[str, dict[str, object]] = {
    "step_started": {"step": 1},
    "model_called": {"step": 1, "model": "m", "messages": 2, "stream": False, "request_id": "r"},
    "agent_message": {"step": 1, "content": "hi", "final": False},
    "hint_injected": {"step": 1, "hint": "h"},
    "run_submitted": {"agent": "ops", "task": "count", "parent_run_id": None},
    "run_started": {"agent": "ops", "model": "m", "tools": [], "max_steps": 5},
    "run_finished": {"output": "42", "termination": "final_answer", "complete": True, "usage": {}},
    "run_cancelled": {"by": "user:x", "reason": None},
}
"""A valid payload of each event type these tests write."""


def ev(kind: str = "step_started", **fields: object) -> NewEvent:
    return NewEvent(payload=payload_from_dict(kind, {**SAMPLES[kind], **fields}))


def numbered(n: int) -> NewEvent:
    """An event that says which of many concurrent steps wrote it."""
    return ev("hint_injected", hint=str(n))


def numbers(events: list[RunEvent]) -> set[int]:
    return {int(p.hint) for p in payloads(events, HintInjected)}


@dataclass(frozen=True, kw_only=True, slots=True)
class Exploded(EventPayload):
    """An event type harness does not know."""

    type: ClassVar[EventType] = "exploded"  # type: ignore[assignment]


async def new_run(store: EventStore, run_id: str = "run_1", **fields: object) -> str:
    fields.setdefault("agent", "ops")
    await store.create_run(NewRun(run_id=run_id, **fields))  # type: ignore[arg-type]
    return run_id


async def step(store: EventStore, run_id: str, *events: NewEvent, **fields: object) -> list[int]:
    written = await store.append(StepWrite(run_id=run_id, events=events, **fields))  # type: ignore[arg-type]
    return [e.seq for e in written]


async def seqs(store: EventStore, run_id: str) -> list[int]:
    return [e.seq for e in await store.events(run_id)]


CONVERSATION = [
    Message.system("You are terse."),
    Message.user("Wie viele Dateien? ✓ \x00 ok"),
    Message(
        role="assistant",
        content=None,
        tool_calls=(
            ToolCall(id="c1", name="bash", arguments='{"cmd": "ls | wc -l"}'),
            ToolCall(id="c2", name="nope", arguments="{not json"),
        ),
        reasoning="count them",
        tokens=31,
        provider_data={"signature": "abc", "nested": [1, {"x": None}]},
    ),
    Message(role="tool", content="12\n", tool_call_id="c1", name="bash", tokens=3),
    Message(role="tool", content="unknown tool nope", tool_call_id="c2", name="nope"),
    Message(role="assistant", content="12 files.", tokens=4),
]


# Runs


async def test_a_created_run_reads_back(store: EventStore) -> None:
    written = await store.create_run(
        NewRun(
            run_id="run_1",
            agent="ops",
            task="count",
            model="local",
            priority=2,
            metadata={"limits": {"max_steps": 5}},
        ),
        events=[ev("run_submitted", task="count")],
        messages=CONVERSATION[:2],
    )
    assert [(e.seq, e.type, e.ts) for e in written] == [(1, "run_submitted", START)]
    run = await store.get_run("run_1")
    assert run is not None
    assert (run.agent, run.task, run.model, run.priority) == ("ops", "count", "local", 2)
    assert (run.state, run.parent_run_id, run.owner, run.lease_expires_at) == (
        "PENDING",
        None,
        None,
        None,
    )
    assert (run.created_at, run.updated_at, run.started_at, run.finished_at) == (
        START,
        START,
        None,
        None,
    )
    assert run.usage == Usage()
    assert run.metadata == {"limits": {"max_steps": 5}}
    assert run.last_seq == 1
    assert await store.messages("run_1") == CONVERSATION[:2]


async def test_a_runs_trace_parent_is_kept_through_claims_and_updates(store: EventStore) -> None:
    traceparent = f"00-{'a1' * 16}-{'b2' * 8}-01"
    await new_run(store, trace_parent=traceparent)
    await new_run(store, "run_2")
    claimed = await store.claim("w1", lease_s=30, limit=10)
    assert {r.run_id: r.trace_parent for r in claimed} == {"run_1": traceparent, "run_2": None}
    await step(store, "run_1", ev(), update=RunUpdate(state="COMPLETED"))
    run = await store.get_run("run_1")
    assert run is not None
    assert run.trace_parent == traceparent


async def test_a_run_tree_is_kept_and_listed_by_parent_and_root(store: EventStore) -> None:
    await new_run(store, "run_root")
    await new_run(store, "run_a", parent_run_id="run_root", root_run_id="run_root", depth=1)
    await new_run(store, "run_b", parent_run_id="run_root", root_run_id="run_root", depth=1)
    await new_run(store, "run_a1", parent_run_id="run_a", root_run_id="run_root", depth=2)
    await new_run(store, "run_again", resumed_from="run_root")
    root = await store.get_run("run_root")
    leaf = await store.get_run("run_a1")
    again = await store.get_run("run_again")
    assert root is not None
    assert leaf is not None
    assert again is not None
    assert (root.parent_run_id, root.root_run_id, root.root, root.depth) == (
        None,
        None,
        "run_root",
        0,
    )
    assert (leaf.parent_run_id, leaf.root, leaf.depth) == ("run_a", "run_root", 2)
    assert (again.resumed_from, again.parent_run_id, again.depth) == ("run_root", None, 0)
    children = await store.list_runs(parent_run_id="run_root", limit=None)
    below = await store.list_runs(root_run_id="run_root", limit=None)
    assert sorted(r.run_id for r in children) == ["run_a", "run_b"]
    assert sorted(r.run_id for r in below) == ["run_a", "run_a1", "run_b"]
    assert root.children_usage == Usage()


async def test_children_usage_is_kept_apart_from_own_usage(store: EventStore) -> None:
    await new_run(store, "run_1", state=RunState.RUNNING, owner="w", lease_s=10)
    own, theirs = Usage(input_tokens=5, cost_usd=0.5), Usage(input_tokens=7, cost_usd=0.25)
    await step(store, "run_1", update=RunUpdate(usage=own, children_usage=theirs), owner="w")
    run = await store.get_run("run_1")
    assert run is not None
    assert (run.usage, run.children_usage, run.total_usage) == (own, theirs, own + theirs)


async def test_a_run_id_is_created_once(store: EventStore) -> None:
    await new_run(store)
    with pytest.raises(StoreConflict, match="run_1 already exists"):
        await new_run(store, agent="other")
    run = await store.get_run("run_1")
    assert run is not None
    assert run.agent == "ops"


async def test_an_unknown_run_is_none_and_cannot_be_written(store: EventStore) -> None:
    assert await store.get_run("run_x") is None
    assert await store.events("run_x") == []
    assert await store.messages("run_x") == []
    with pytest.raises(StoreConflict, match="no run run_x"):
        await step(store, "run_x", ev())


async def test_a_run_created_with_an_owner_is_leased(store: EventStore) -> None:
    await new_run(store, owner="w1", lease_s=30.0, state="RUNNING")
    run = await store.get_run("run_1")
    assert run is not None
    assert (run.owner, run.lease_expires_at, run.started_at) == ("w1", START + 30.0, START)
    with pytest.raises(ConfigError, match="no lease_s"):
        await new_run(store, "run_2", owner="w1")


async def test_updates_change_the_row_and_stamp_times(store: EventStore, clock: FakeClock) -> None:
    await new_run(store)
    clock.advance(1)
    await step(store, "run_1", update=RunUpdate(state="RUNNING", model="big"))
    clock.advance(1)
    await step(store, "run_1", update=RunUpdate(state="WAITING_TOOL"))
    await step(store, "run_1", update=RunUpdate(state="RUNNING"))
    clock.advance(1)
    usage = Usage(
        input_tokens=10,
        output_tokens=5,
        cached_tokens=2,
        reasoning_tokens=1,
        requests=2,
        tool_calls=1,
        cost_usd=0.0125,
    )
    final = RunUpdate(
        state="COMPLETED",
        usage=usage,
        result="42",
        termination="final_answer",
        error="none really",
        metadata={"k": ["v"]},
        result_data={"data": {"n": [1, 2.5, None]}, "output_valid": True, "detail": "ü"},
    )
    await step(store, "run_1", ev("run_finished"), update=final)
    run = await store.get_run("run_1")
    assert run is not None
    assert (run.state, run.model, run.result, run.termination, run.error) == (
        "COMPLETED",
        "big",
        "42",
        "final_answer",
        "none really",
    )
    assert (run.started_at, run.finished_at, run.updated_at) == (START + 1, START + 3, START + 3)
    assert run.usage == usage
    assert run.metadata == {"k": ["v"]}
    assert run.result_data == {"data": {"n": [1, 2.5, None]}, "output_valid": True, "detail": "ü"}


class State(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"


async def test_states_may_be_str_enum_members_and_must_be_known(store: EventStore) -> None:
    await new_run(store, state=State.PENDING)
    moved = await store.transition("run_1", [State.PENDING], State.RUNNING)
    assert moved == []
    await step(store, "run_1", expect_states={State.RUNNING}, update=RunUpdate(state=State.PAUSED))
    run = await store.get_run("run_1")
    assert run is not None
    assert run.state is RunState.PAUSED  # read back as the one definition of the states
    assert [r.run_id for r in await store.list_runs(state=State.PAUSED)] == ["run_1"]
    assert [r.run_id for r in await store.claim("w1", lease_s=5, states=[State.PAUSED])] == [
        "run_1"
    ]
    with pytest.raises(ConfigError, match="unknown run state 'DONE' for run run_1"):
        await step(store, "run_1", ev(), update=RunUpdate(state="DONE"))
    with pytest.raises(ConfigError, match="unknown run state 'paused' for run run_2"):
        await new_run(store, "run_2", state="paused")
    assert await seqs(store, "run_1") == []
    assert await store.get_run("run_2") is None


# Events: numbering and atomicity


async def test_seq_starts_at_one_and_has_no_gaps(store: EventStore) -> None:
    await new_run(store)
    assert await step(store, "run_1", ev(), ev("model_called")) == [1, 2]
    assert await step(store, "run_1") == []
    assert await step(store, "run_1", ev("agent_message", content="hi")) == [3]
    events = await store.events("run_1")
    assert [(e.seq, e.type) for e in events] == [
        (1, "step_started"),
        (2, "model_called"),
        (3, "agent_message"),
    ]
    assert events[2].payload == AgentMessage(step=1, content="hi", final=False)
    assert {e.run_id for e in events} == {"run_1"}
    assert await seqs(store, "run_1") == [1, 2, 3]
    assert [e.seq for e in await store.events("run_1", after_seq=1, limit=1)] == [2]


async def test_an_event_keeps_its_own_timestamp(store: EventStore) -> None:
    await new_run(store)
    written = await store.append(
        StepWrite(run_id="run_1", events=[NewEvent(payload=StepStarted(step=1), ts=123.25), ev()])
    )
    assert [e.ts for e in written] == [123.25, START]
    assert [e.ts for e in await store.events("run_1")] == [123.25, START]


async def test_written_events_carry_their_stored_json(store: EventStore) -> None:
    """What `append` returns holds the text the store wrote: the trace export sends it on."""
    await new_run(store)
    written = await store.append(
        StepWrite(run_id="run_1", events=[ev(), ev("agent_message", content="héllo \u2603")])
    )
    read = await store.events("run_1")
    assert [e.stored for e in written] == [dumps(event_to_dict(e)) for e in read]
    assert [event_from_dict(loads(e.stored or "")) for e in written] == read
    assert [e.stored for e in read] == [None, None]  # read back: not kept a second time
    assert written == read  # `stored` is not part of an event's value


async def test_events_of_many_runs_come_by_run_then_seq_filtered_by_type(
    store: EventStore,
) -> None:
    ids = [f"run_{i:04}" for i in range(1203)]  # several batches of ids
    for run_id in ids:
        await new_run(store, run_id)
    writes = [
        step(store, run_id, ev(), ev("model_called"), numbered(i)) for i, run_id in enumerate(ids)
    ]
    await asyncio.gather(*writes)
    await new_run(store, "other")
    await step(store, "other", numbered(-1))
    wanted = list(reversed(ids))
    found = await store.events_of_runs(wanted, types=["hint_injected", "step_started"])
    assert [(e.run_id, e.seq, e.type) for e in found] == [
        (run_id, seq, kind)
        for run_id in ids
        for seq, kind in ((1, "step_started"), (3, "hint_injected"))
    ]
    assert [int(p.hint) for p in payloads(found, HintInjected)] == list(range(1203))
    every = await store.events_of_runs(["run_0007", "run_0007", "missing"])
    assert [(e.run_id, e.seq) for e in every] == [("run_0007", 1), ("run_0007", 2), ("run_0007", 3)]
    assert await store.events_of_runs(ids, types=[]) == []
    assert await store.events_of_runs([]) == []


async def test_hundreds_of_concurrent_appends_to_one_run_are_gap_free(store: EventStore) -> None:
    await new_run(store)
    sizes = [random.Random(i).randint(1, 3) for i in range(300)]
    results = await asyncio.gather(
        *(step(store, "run_1", *[numbered(i)] * size) for i, size in enumerate(sizes))
    )
    total = sum(sizes)
    assert sorted(s for written in results for s in written) == list(range(1, total + 1))
    for written in results:  # each step's events are contiguous
        assert written == list(range(written[0], written[0] + len(written)))
    assert await seqs(store, "run_1") == list(range(1, total + 1))
    run = await store.get_run("run_1")
    assert run is not None
    assert run.last_seq == total


async def test_concurrent_appends_to_many_runs_number_each_run(store: EventStore) -> None:
    runs = [await new_run(store, f"run_{i:03}") for i in range(100)]
    await asyncio.gather(*(step(store, r, ev(), ev()) for r in runs for _ in range(4)))
    for run_id in runs:
        assert await seqs(store, run_id) == list(range(1, 9))


async def test_two_stores_on_one_database_share_the_numbering(
    target: str, clock: FakeClock
) -> None:
    async with (
        await open_store(target, clock=clock) as one,
        await open_store(target, clock=clock) as two,
    ):
        await new_run(one)
        await asyncio.gather(*(step(s, "run_1", ev()) for s in (one, two) for _ in range(100)))
        assert await seqs(two, "run_1") == list(range(1, 201))


async def test_two_stores_writing_two_runs_in_opposite_orders_finish(
    target: str, clock: FakeClock
) -> None:
    async with (
        await open_store(target, clock=clock) as one,
        await open_store(target, clock=clock) as two,
    ):
        await new_run(one, "run_a")
        await new_run(one, "run_b")
        await asyncio.gather(
            *(step(one, r, ev()) for _ in range(100) for r in ("run_a", "run_b")),
            *(step(two, r, ev()) for _ in range(100) for r in ("run_b", "run_a")),
        )
        assert await seqs(one, "run_a") == list(range(1, 201))
        assert await seqs(two, "run_b") == list(range(1, 201))


async def test_a_step_that_fails_mid_write_leaves_nothing(store: EventStore) -> None:
    await new_run(store)
    await step(store, "run_1", ev())
    broken = Message(role="assistant", content="x", provider_data={"bad": object()})
    with pytest.raises(ConfigError, match="assistant message of run run_1 is not JSON"):
        await store.append(
            StepWrite(
                run_id="run_1",
                events=[ev(), ev()],
                messages=[Message.user("a"), broken],
                blobs={"k": "v"},
                update=RunUpdate(state="RUNNING"),
            )
        )
    assert await seqs(store, "run_1") == [1]
    assert await store.messages("run_1") == []
    assert await store.get_blob("run_1", "k") is None
    run = await store.get_run("run_1")
    assert run is not None
    assert (run.state, run.last_seq) == ("PENDING", 1)
    assert await step(store, "run_1", ev()) == [2]


async def test_a_failing_step_does_not_undo_the_steps_committed_with_it(store: EventStore) -> None:
    await new_run(store)
    bad = NewEvent(payload=HintInjected(step=1, hint=object()))  # type: ignore[arg-type]
    outcomes = await asyncio.gather(
        *(step(store, "run_1", numbered(i), bad if i % 3 == 0 else ev()) for i in range(90)),
        return_exceptions=True,
    )
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(failed) == 30
    assert all(isinstance(o, ConfigError) for o in failed)
    assert await seqs(store, "run_1") == list(range(1, 121))
    kept = numbers(await store.events("run_1"))
    assert kept == {i for i in range(90) if i % 3}


async def test_a_step_is_written_as_it_was_when_appended(store: EventStore) -> None:
    await new_run(store)
    events, messages = [numbered(1)], [Message.user("a")]
    pending = asyncio.ensure_future(
        store.append(StepWrite(run_id="run_1", events=events, messages=messages))
    )
    await asyncio.sleep(0)
    events.append(numbered(2))
    messages.clear()
    assert [e.seq for e in await pending] == [1]
    assert await store.messages("run_1") == [Message.user("a")]


async def test_an_unknown_event_type_is_refused(store: EventStore) -> None:
    await new_run(store)
    with pytest.raises(ConfigError, match="unknown event type 'exploded'"):
        await step(store, "run_1", ev(), NewEvent(payload=Exploded()))
    assert await seqs(store, "run_1") == []


async def test_expected_states_guard_a_step(store: EventStore) -> None:
    await new_run(store)
    with pytest.raises(StoreConflict, match="run_1 is PENDING, not PAUSED or RUNNING"):
        await step(store, "run_1", ev(), expect_states={"RUNNING", "PAUSED"})
    assert await seqs(store, "run_1") == []
    assert await step(store, "run_1", ev(), expect_states={"PENDING"}) == [1]


async def test_the_owner_fence_keeps_a_stale_owner_out(store: EventStore, clock: FakeClock) -> None:
    await new_run(store)
    await store.claim("w1", lease_s=10)
    assert await step(store, "run_1", ev(), owner="w1") == [1]
    clock.advance(11)
    await store.claim("w2", lease_s=10)
    with pytest.raises(StoreConflict, match="leased to w2, not to w1"):
        await step(store, "run_1", ev(), owner="w1")
    await store.release("w2")
    with pytest.raises(StoreConflict, match="leased to nobody, not to w1"):
        await step(store, "run_1", ev(), owner="w1")
    assert await seqs(store, "run_1") == [1]


async def test_a_step_key_writes_once(store: EventStore) -> None:
    await new_run(store)
    first = await store.append(
        StepWrite(
            run_id="run_1",
            events=[ev(), ev("run_finished")],
            messages=[Message.user("a")],
            update=RunUpdate(state="COMPLETED"),
            expect_states={"PENDING"},
            key="s1-a1",
        )
    )
    again = await store.append(
        StepWrite(
            run_id="run_1",
            events=[ev()],
            messages=[Message.user("b")],
            expect_states={"PENDING"},
            key="s1-a1",
        )
    )
    assert again == first
    assert await seqs(store, "run_1") == [1, 2]
    assert await store.messages("run_1") == [Message.user("a")]
    assert await step(store, "run_1", ev(), key="s2-a1") == [3]
    assert await step(store, "run_1", key="empty") == []
    assert await step(store, "run_1", ev(), key="empty") == []


async def test_writes_queued_together_commit_in_one_transaction(
    store: EventStore, target: str
) -> None:
    # 8 writes: SQLite's writer leaves writes to a next transaction once the first ones held
    # the event loop for 1.5 ms of CPU, which 20 took on a slow, busy machine
    runs = [await new_run(store, f"run_{i}") for i in range(4)]
    transactions = Transactions(target)
    async with held_writer(store):  # every write below is queued before the writer is free
        writes = [
            asyncio.ensure_future(store.append(StepWrite(run_id=run_id, events=[ev(), ev()])))
            for run_id in runs * 2
        ]
        await asyncio.sleep(0)  # each append queues its write before it first waits
    written = await asyncio.gather(*writes)
    assert [[e.seq for e in w] for w in written] == [[1, 2]] * 4 + [[3, 4]] * 4
    assert transactions.count(runs) == 1


async def test_writes_committed_together_see_each_others_rows(
    store: EventStore, target: str
) -> None:
    """Steps of one group commit: a repeated key finds the events its twin just wrote."""
    await new_run(store)
    await new_run(store, "run_2")

    def keyed(run_id: str, text: str) -> StepWrite:
        return StepWrite(run_id=run_id, events=[ev(), ev()], messages=[Message.user(text)], key="k")

    transactions = Transactions(target)
    async with held_writer(store):
        writes = [
            asyncio.ensure_future(store.append(keyed("run_1", "a"))),
            asyncio.ensure_future(store.append(keyed("run_1", "b"))),
            asyncio.ensure_future(store.append(keyed("run_2", "c"))),
        ]
        await asyncio.sleep(0)
    first, twin, other = await asyncio.gather(*writes)
    assert transactions.count(["run_1", "run_2"]) == 1  # the twin saw rows not yet committed
    assert twin == first
    assert [e.seq for e in first] == [1, 2]
    assert await seqs(store, "run_1") == [1, 2]
    assert await store.messages("run_1") == [Message.user("a")]
    assert await store.messages("run_2") == [Message.user("c")]
    assert [e.seq for e in other] == [1, 2]


# Messages


async def test_messages_round_trip_exactly_and_in_order(store: EventStore) -> None:
    await new_run(store)
    await new_run(store, "run_2")
    await store.append(StepWrite(run_id="run_1", messages=CONVERSATION[:2]))
    await store.append(StepWrite(run_id="run_2", messages=[Message.user("other")]))
    await store.append(StepWrite(run_id="run_1", messages=CONVERSATION[2:]))
    assert await store.messages("run_1") == CONVERSATION
    assert await store.messages("run_2") == [Message.user("other")]


async def test_messages_of_many_runs_come_by_run_each_in_order(store: EventStore) -> None:
    ids = [f"run_{i:04}" for i in range(1203)]  # several batches of ids
    for run_id in ids:
        await new_run(store, run_id)
    await asyncio.gather(
        *(store.append(StepWrite(run_id=run_id, messages=[Message.user(run_id)])) for run_id in ids)
    )
    await store.append(StepWrite(run_id="run_0007", messages=CONVERSATION))
    await new_run(store, "silent")
    found = await store.messages_of_runs([*reversed(ids), "run_0007", "silent", "missing"])
    assert set(found) == {*ids, "silent", "missing"}
    assert found["run_0007"] == [Message.user("run_0007"), *CONVERSATION]
    assert all(found[run_id] == [Message.user(run_id)] for run_id in ids if run_id != "run_0007")
    assert found["silent"] == found["missing"] == []
    assert await store.messages_of_runs([]) == {}


async def test_each_message_row_keeps_its_tokens_and_their_source(target: str) -> None:
    async with await open_store(target) as store:
        await new_run(store)
        counted = [
            Message(role="user", content="hi", tokens=2, tokens_source="estimated"),
            Message(role="assistant", content="hello", tokens=1, tokens_source="reported"),
            Message.user("not counted"),
        ]
        await store.append(StepWrite(run_id="run_1", messages=counted))
        assert await store.messages("run_1") == counted
    rows = raw_rows(target, "SELECT seq, tokens, tokens_source FROM messages ORDER BY seq")
    assert rows == [(1, 2, "estimated"), (2, 1, "reported"), (3, None, None)]


def raw_rows(target: str, sql: str) -> list[tuple[object, ...]]:
    """Rows straight from the database, past the store's own decoding."""
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target) as conn:
            return [tuple(row) for row in conn.execute(sql).fetchall()]  # type: ignore[arg-type]
    import sqlite3

    with contextlib.closing(sqlite3.connect(target)) as conn:
        return [tuple(row) for row in conn.execute(sql).fetchall()]


# Transitions


async def test_transition_is_a_compare_and_set(store: EventStore) -> None:
    await new_run(store)
    moved = await store.transition("run_1", {"PENDING"}, "RUNNING", events=[ev("run_started")])
    assert moved is not None
    assert [(e.seq, e.type) for e in moved] == [(1, "run_started")]
    assert await store.transition("run_1", {"PENDING"}, "CANCELLED", events=[ev()]) is None
    assert await seqs(store, "run_1") == [1]
    done = await store.transition(
        "run_1", ["RUNNING"], "FAILED", update=RunUpdate(error="boom", termination="error")
    )
    assert done == []
    run = await store.get_run("run_1")
    assert run is not None
    assert (run.state, run.error, run.termination) == ("FAILED", "boom", "error")
    with pytest.raises(StoreConflict):
        await store.transition("run_x", {"PENDING"}, "RUNNING")


async def test_one_of_many_concurrent_transitions_wins(store: EventStore) -> None:
    await new_run(store)
    outcomes = await asyncio.gather(
        *(
            store.transition("run_1", {"PENDING"}, "CANCELLED", events=[ev("run_cancelled")])
            for _ in range(20)
        )
    )
    assert sum(o is not None for o in outcomes) == 1
    assert await seqs(store, "run_1") == [1]


# Listing


async def test_runs_are_listed_newest_first_and_filtered(
    store: EventStore, clock: FakeClock
) -> None:
    for i, (agent, state) in enumerate(
        [("ops", "PENDING"), ("dev", "RUNNING"), ("ops", "COMPLETED"), ("ops", "RUNNING")]
    ):
        await new_run(store, f"run_{i}", agent=agent, state=state)
        clock.advance(10)
    await store.claim("w1", lease_s=5, run_ids=["run_3"])

    async def ids(**filters: object) -> list[str]:
        return [r.run_id for r in await store.list_runs(**filters)]  # type: ignore[arg-type]

    assert await ids() == ["run_3", "run_2", "run_1", "run_0"]
    assert await ids(state="RUNNING") == ["run_3", "run_1"]
    assert await ids(state=["PENDING", "COMPLETED"]) == ["run_2", "run_0"]
    assert await ids(state=[]) == []
    assert await ids(agent="ops", state="RUNNING") == ["run_3"]
    assert await ids(owner="w1") == ["run_3"]
    assert await ids(since=START + 10, until=START + 30) == ["run_2", "run_1"]
    assert await ids(limit=2) == ["run_3", "run_2"]
    assert await ids(agent="nobody") == []


async def test_listing_without_a_limit_lists_every_run(store: EventStore) -> None:
    for i in range(120):  # more than the default limit of 100
        await new_run(store, f"run_{i:03}")
    assert len(await store.list_runs()) == 100
    listed = await store.list_runs(limit=None)
    assert sorted(r.run_id for r in listed) == [f"run_{i:03}" for i in range(120)]


async def test_pages_go_on_after_a_run_without_skipping_or_repeating_ties(
    store: EventStore, clock: FakeClock
) -> None:
    for i in range(7):  # runs created at the same instant are ordered by id
        await new_run(store, f"run_{i}", agent="ops" if i % 2 else "dev")
        if i in (2, 4):
            clock.advance(1)
    seen: list[str] = []
    before = None
    while True:
        page = await store.list_runs(limit=2, before=before)
        seen += [r.run_id for r in page]
        if len(page) < 2:
            break
        before = (page[-1].created_at, page[-1].run_id)
    assert seen == ["run_6", "run_5", "run_4", "run_3", "run_2", "run_1", "run_0"]
    last = await store.get_run("run_4")
    assert last is not None
    after = await store.list_runs(agent="ops", before=(last.created_at, last.run_id))
    assert [r.run_id for r in after] == ["run_3", "run_1"]


async def test_a_run_keeps_its_task_type_and_runs_are_listed_by_it(store: EventStore) -> None:
    await new_run(store, "run_a", task_type="refund")
    await new_run(store, "run_b", task_type="billing.refund")
    await new_run(store, "run_c")
    assert (await store.get_run("run_a")).task_type == "refund"  # type: ignore[union-attr]
    assert (await store.get_run("run_c")).task_type is None  # type: ignore[union-attr]
    assert [r.run_id for r in await store.list_runs(task_type="refund")] == ["run_a"]
    assert len(await store.list_runs(limit=None)) == 3
    assert len(await store.list_runs(limit=2)) == 2


async def test_events_of_many_runs_come_by_run_and_seq_filtered_by_type(
    store: EventStore,
) -> None:
    ids = [f"run_{i:04d}" for i in range(1203)]  # more runs than one statement takes
    for run_id in ids:
        await new_run(store, run_id)
    for run_id in ids[:3] + ids[-2:]:
        await step(store, run_id, ev("model_called"), ev("step_started"), ev("hint_injected"))
    found = await store.events_of_runs(list(reversed(ids)), types=["model_called", "hint_injected"])
    expected = [(r, seq) for r in ids[:3] + ids[-2:] for seq in (1, 3)]
    assert [(e.run_id, e.seq) for e in found] == expected
    assert {e.type for e in found} == {"model_called", "hint_injected"}
    assert await store.events_of_runs(ids, types=[]) == []
    assert await store.events_of_runs([], types=["model_called"]) == []


async def test_message_sizes_of_many_runs_come_without_their_text(store: EventStore) -> None:
    await new_run(store, "run_1")
    await new_run(store, "run_2")
    await step(store, "run_1", messages=CONVERSATION)
    await step(store, "run_2", messages=CONVERSATION[3:4])
    tools = await store.message_tokens(["run_2", "run_1"], roles=["tool"])
    assert [(m.run_id, m.seq, m.tool_call_id, m.tokens) for m in tools] == [
        ("run_1", 4, "c1", 3),
        ("run_1", 5, "c2", None),
        ("run_2", 1, "c1", 3),
    ]
    every = await store.message_tokens(["run_1"])
    assert [m.role for m in every] == [m.role for m in CONVERSATION]
    assert every[2].tokens == 31
    assert await store.message_tokens(["run_1"], roles=[]) == []


# Leases


async def test_claim_takes_only_free_or_expired_runs(store: EventStore, clock: FakeClock) -> None:
    for i, state in enumerate(["PENDING", "PAUSED", "COMPLETED", "RUNNING", "WAITING_TOOL"]):
        await new_run(store, f"run_{i}", state=state)
    taken = await store.claim("w1", lease_s=30)
    assert sorted(r.run_id for r in taken) == ["run_0", "run_3", "run_4"]
    assert {(r.owner, r.lease_expires_at) for r in taken} == {("w1", START + 30)}
    assert await store.claim("w2", lease_s=30) == []
    assert await store.claim("w2", lease_s=30, run_ids=["run_0"]) == []
    clock.advance(30)
    assert [r.run_id for r in await store.claim("w2", lease_s=30, run_ids=["run_0"])] == ["run_0"]
    paused = await store.claim("w2", lease_s=30, states={"PAUSED"})
    assert [r.run_id for r in paused] == ["run_1"]


async def test_claim_prefers_priority_then_age_and_respects_limits(
    store: EventStore, clock: FakeClock
) -> None:
    for i, priority in enumerate([0, 5, 0, 5]):
        await new_run(store, f"run_{i}", priority=priority)
        clock.advance(1)
    assert [r.run_id for r in await store.claim("w1", lease_s=9, limit=3)] == [
        "run_1",
        "run_3",
        "run_0",
    ]
    assert await store.claim("w1", lease_s=9, limit=0) == []
    assert await store.claim("w1", lease_s=9, run_ids=[]) == []
    mine = await store.claim("w1", lease_s=20)
    assert [r.run_id for r in mine] == ["run_1", "run_3", "run_0", "run_2"]
    assert {r.lease_expires_at for r in mine} == {START + 24}


async def test_concurrent_owners_never_share_a_run(target: str, clock: FakeClock) -> None:
    async with (
        await open_store(target, clock=clock) as one,
        await open_store(target, clock=clock) as two,
    ):
        for i in range(60):
            await new_run(one, f"run_{i:02}")
        claims = await asyncio.gather(
            *(s.claim(f"w{i}", lease_s=30, limit=7) for i, s in enumerate([one, two] * 10))
        )
        taken = [r.run_id for batch in claims for r in batch]
        assert sorted(taken) == [f"run_{i:02}" for i in range(60)]


async def test_renew_extends_only_leases_still_held(store: EventStore, clock: FakeClock) -> None:
    for i in range(3):
        await new_run(store, f"run_{i}")
    await store.claim("w1", lease_s=10)
    clock.advance(5)
    assert await store.renew("w1", ["run_0", "run_1"], lease_s=10) == ["run_0", "run_1"]
    clock.advance(6)  # run_2's lease ran out; w2 takes it
    assert [r.run_id for r in await store.claim("w2", lease_s=10)] == ["run_2"]
    assert await store.renew("w1", ["run_0", "run_1", "run_2"], lease_s=10) == ["run_0", "run_1"]
    assert await store.renew("w1", [], lease_s=10) == []
    run = await store.get_run("run_0")
    assert run is not None
    assert run.lease_expires_at == START + 21


async def test_release_frees_runs_for_other_owners(store: EventStore) -> None:
    for i in range(3):
        await new_run(store, f"run_{i}")
    await store.claim("w1", lease_s=60)
    await store.release("w1", ["run_0"])
    await store.release("w2")  # not its runs: nothing happens
    await store.release("w1", [])
    assert [r.run_id for r in await store.claim("w2", lease_s=60)] == ["run_0"]
    await store.release("w1")
    assert [r.run_id for r in await store.claim("w2", lease_s=60)] == ["run_0", "run_1", "run_2"]
    run = await store.get_run("run_0")
    assert run is not None
    assert run.owner == "w2"


async def test_start_runs_moves_only_the_owners_pending_runs_to_running(
    store: EventStore, clock: FakeClock
) -> None:
    for i in range(4):
        await new_run(store, f"run_{i}")
    await store.claim("w1", lease_s=60, run_ids=["run_0", "run_1", "run_2"])
    await store.claim("w2", lease_s=60, run_ids=["run_3"])
    assert await store.transition("run_2", {"PENDING"}, "CANCELLED") == []
    clock.advance(5)
    wanted = ["run_0", "run_1", "run_2", "run_3", "run_x"]
    assert sorted(await store.start_runs("w1", wanted)) == ["run_0", "run_1"]
    assert await store.start_runs("w1", ["run_0"]) == []  # RUNNING already
    assert await store.start_runs("w1", []) == []
    runs = {r.run_id: r for r in await store.list_runs(limit=None)}
    assert {k: r.state for k, r in runs.items()} == {
        "run_0": "RUNNING",
        "run_1": "RUNNING",
        "run_2": "CANCELLED",
        "run_3": "PENDING",
    }
    assert (runs["run_0"].started_at, runs["run_0"].updated_at) == (START + 5, START + 5)
    assert runs["run_3"].started_at is None
    assert [e.type for e in await store.events("run_0")] == []  # no event is written


async def test_claim_names_the_owner_it_took_each_run_from(
    store: EventStore, clock: FakeClock
) -> None:
    await new_run(store, "run_0", state="RUNNING")
    await new_run(store, "run_1")
    (first,) = await store.claim("w1", lease_s=5, run_ids=["run_0"])
    assert (first.owner, first.previous_owner) == ("w1", None)
    clock.advance(10)
    taken = await store.claim("w2", lease_s=5)
    assert [(r.run_id, r.owner, r.previous_owner) for r in taken] == [
        ("run_0", "w2", "w1"),
        ("run_1", "w2", None),
    ]
    run = await store.get_run("run_0")
    assert run is not None
    assert run.previous_owner is None  # only a claim says who held the run before it


async def test_expired_runs_are_unfinished_runs_past_their_lease(
    store: EventStore, clock: FakeClock
) -> None:
    for i, state in enumerate(["RUNNING", "RUNNING", "WAITING_TOOL", "PENDING"]):
        await new_run(store, f"run_{i}", state=state)
    await store.claim("w1", lease_s=10, run_ids=["run_0", "run_1"])
    await store.claim("w1", lease_s=20, run_ids=["run_2"])
    await step(store, "run_1", update=RunUpdate(state="COMPLETED"))
    assert await store.expired_runs() == []
    clock.advance(10)
    assert [r.run_id for r in await store.expired_runs()] == ["run_0"]
    clock.advance(10)
    assert [r.run_id for r in await store.expired_runs()] == ["run_0", "run_2"]


async def test_lease_expires_in_names_the_next_lease_of_another_owner(
    store: EventStore, clock: FakeClock
) -> None:
    for i in range(3):
        await new_run(store, f"run_{i}", state="RUNNING")
    assert await store.lease_expires_in("w1") is None
    await store.claim("w1", lease_s=10, run_ids=["run_0"])
    await store.claim("w2", lease_s=20, run_ids=["run_1", "run_2"])
    assert await store.lease_expires_in("w1") == 20  # its own lease does not count
    assert await store.lease_expires_in("w2") == 10
    clock.advance(5)
    await step(store, "run_1", update=RunUpdate(state="COMPLETED"))
    assert await store.lease_expires_in("w1") == 15
    assert await store.lease_expires_in("w2") == 5
    clock.advance(5)
    assert await store.lease_expires_in("w2") is None  # w1's lease ran out already
    await step(store, "run_2", update=RunUpdate(state="COMPLETED"))
    assert await store.lease_expires_in("w1") is None  # a finished run's lease is no news


# Controls


async def test_controls_are_taken_once_in_order(store: EventStore, clock: FakeClock) -> None:
    await new_run(store)
    first = await store.send_control("run_1", "pause")
    clock.advance(1)
    second = await store.send_control("run_1", "approve", {"call_id": "c1", "by": "cli"})
    assert second > first
    taken = await store.take_controls(run_id="run_1")
    assert [(c.id, c.kind, dict(c.payload), c.created_at) for c in taken] == [
        (first, "pause", {}, START),
        (second, "approve", {"call_id": "c1", "by": "cli"}, START + 1),
    ]
    assert await store.take_controls(run_id="run_1") == []
    third = await store.send_control("run_1", "cancel")
    assert [c.id for c in await store.take_controls(run_id="run_1")] == [third]


async def test_an_owner_takes_the_controls_of_its_runs(store: EventStore) -> None:
    for i in range(3):
        await new_run(store, f"run_{i}")
    await store.claim("w1", lease_s=60, run_ids=["run_0", "run_1"])
    for i in range(3):
        await store.send_control(f"run_{i}", "cancel")
    taken = await store.take_controls(owner="w1")
    assert [c.run_id for c in taken] == ["run_0", "run_1"]
    assert await store.take_controls(owner="w1") == []
    assert [c.run_id for c in await store.take_controls(run_id="run_2")] == ["run_2"]


async def test_an_engine_takes_the_controls_of_its_runs(store: EventStore) -> None:
    """Temporal runs have no owner: a Temporal worker relays their controls."""
    await new_run(store, "run_e")
    await new_run(store, "run_t1", engine="temporal")
    await new_run(store, "run_t2", engine="temporal")
    await store.claim("w1", lease_s=60, run_ids=["run_e"])
    for run_id in ("run_e", "run_t1", "run_t2", "run_t1"):
        await store.send_control(run_id, "mail")
    taken = await store.take_controls(engine="temporal")
    assert [c.run_id for c in taken] == ["run_t1", "run_t2", "run_t1"]
    assert await store.take_controls(engine="temporal") == []
    assert [c.run_id for c in await store.take_controls(owner="w1")] == ["run_e"]


async def test_concurrent_takers_get_each_control_exactly_once(
    target: str, clock: FakeClock
) -> None:
    async with (
        await open_store(target, clock=clock) as one,
        await open_store(target, clock=clock) as two,
    ):
        await new_run(one)
        sent = [await one.send_control("run_1", "resume", {"n": i}) for i in range(50)]
        takes = await asyncio.gather(
            *(s.take_controls(run_id="run_1") for s in [one, two] * 10),
            *(one.send_control("run_1", "pause") for _ in range(10)),
        )
        taken = [c.id for batch in takes[:20] for c in batch]  # type: ignore[union-attr]
        late = await one.take_controls(run_id="run_1")
        assert len(taken) + len(late) == 60
        assert set(sent) <= set(taken)
        assert len(set(taken) | {c.id for c in late}) == 60


async def test_controls_need_a_run_and_one_scope(store: EventStore) -> None:
    with pytest.raises(StoreConflict, match="no run run_x"):
        await store.send_control("run_x", "pause")
    with pytest.raises(ConfigError, match="exactly one"):
        await store.take_controls()
    with pytest.raises(ConfigError, match="exactly one"):
        await store.take_controls(run_id="a", owner="b")
    with pytest.raises(ConfigError, match="exactly one"):
        await store.take_controls(owner="b", engine="temporal")


# Decisions


def decision(
    call_id: str = "c1", approved: bool = True, by: str = "alice", **more: object
) -> Decision:
    return Decision(run_id="run_1", call_id=call_id, approved=approved, by=by, **more)  # type: ignore[arg-type]


async def test_the_first_decision_on_a_call_stands(store: EventStore, clock: FakeClock) -> None:
    await new_run(store)
    assert await store.decide(decision(reason="fine")) is None
    clock.advance(1)
    earlier = await store.decide(decision(approved=False, by="bob", reason="no"))
    assert earlier == decision(reason="fine", decided_at=START)
    assert await store.decide(decision("c2", approved=False, by="bob")) is None
    assert await store.decisions("run_1") == [
        decision(reason="fine", decided_at=START),
        decision("c2", approved=False, by="bob", decided_at=START + 1),
    ]
    taken = await store.take_controls(run_id="run_1")  # only the winners are delivered
    assert [(c.kind, dict(c.payload)) for c in taken] == [
        ("approve", {"call_id": "c1", "by": "alice", "reason": "fine"}),
        ("deny", {"call_id": "c2", "by": "bob", "reason": None}),
    ]
    with pytest.raises(StoreConflict, match="no run run_x"):
        await store.decide(Decision(run_id="run_x", call_id="c1", approved=True, by="x"))


async def test_of_many_racing_decisions_from_two_stores_one_wins(
    target: str, clock: FakeClock
) -> None:
    async with (
        await open_store(target, clock=clock) as one,
        await open_store(target, clock=clock) as two,
    ):
        await new_run(one)
        for call in range(10):
            tries = [decision(f"c{call}", approved=i % 2 == 0, by=f"p{i}") for i in range(6)]
            outcomes = await asyncio.gather(
                *(s.decide(d) for s, d in zip([one, two] * 3, tries, strict=True))
            )
            winners = [d for d, o in zip(tries, outcomes, strict=True) if o is None]
            assert len(winners) == 1
            assert {o.by for o in outcomes if o is not None} == {winners[0].by}
        taken = await one.take_controls(run_id="run_1")
        assert sorted(c.payload["call_id"] for c in taken) == sorted(f"c{i}" for i in range(10))


# Blobs and audit


async def test_blobs_are_kept_replaced_and_committed_with_their_step(store: EventStore) -> None:
    await new_run(store)
    big = "line ✓ \x00\n" * 100_000
    await store.put_blob("run_1", "call_1", big)
    assert await store.get_blob("run_1", "call_1") == big
    await store.put_blob("run_1", "call_1", "short")
    assert await store.get_blob("run_1", "call_1") == "short"
    await store.append(StepWrite(run_id="run_1", events=[ev()], blobs={"a": "1", "b": ""}))
    assert (await store.get_blob("run_1", "a"), await store.get_blob("run_1", "b")) == ("1", "")
    assert await store.get_blob("run_1", "missing") is None
    with pytest.raises(StoreConflict):
        await store.put_blob("run_x", "k", "v")


async def test_audit_records_are_kept_in_order(store: EventStore) -> None:
    record = {
        "run_id": "run_1",
        "call_id": "c1",
        "tool": "bash",
        "approved": True,
        "exit_code": None,
        "duration_s": 0.5,
        "v": "user field",
    }
    await store.record_audit("run_1", record)
    await store.record_audit("run_2", {"call_id": "c2"})
    await store.record_audit("run_1", {"call_id": "c3"})
    assert await store.audit("run_1") == [record, {"call_id": "c3"}]
    assert [r["call_id"] for r in await store.audit()] == ["c1", "c2", "c3"]
    assert await store.audit("run_x") == []
    with pytest.raises(ConfigError, match="audit record of run run_1"):
        await store.record_audit("run_1", {"bad": {1, 2}})


# Schema, reopening, closing


async def test_the_schema_version_is_recorded_and_migrating_is_idempotent(
    target: str, clock: FakeClock
) -> None:
    stores = await asyncio.gather(*(open_store(target, clock=clock) for _ in range(3)))
    try:
        assert [await s.schema_version() for s in stores] == [LATEST_VERSION] * 3
    finally:
        for opened in stores:
            await opened.close()
    async with await open_store(target, clock=clock) as again:
        assert await again.schema_version() == LATEST_VERSION


async def test_everything_survives_closing_and_reopening(target: str, clock: FakeClock) -> None:
    async with await open_store(target, clock=clock) as first:
        await new_run(first)
        await first.append(
            StepWrite(
                run_id="run_1",
                events=[ev(), ev()],
                messages=CONVERSATION,
                blobs={"k": "v"},
                update=RunUpdate(state="RUNNING"),
            )
        )
        await first.claim("w1", lease_s=60)
        await first.send_control("run_1", "pause")
        await first.record_audit("run_1", {"call_id": "c1"})
        before = await first.get_run("run_1")
    async with await open_store(target, clock=clock) as second:
        assert await second.get_run("run_1") == before
        assert await seqs(second, "run_1") == [1, 2]
        assert await second.messages("run_1") == CONVERSATION
        assert await second.get_blob("run_1", "k") == "v"
        assert [c.kind for c in await second.take_controls(owner="w1")] == ["pause"]
        assert await second.audit("run_1") == [{"call_id": "c1"}]
        assert await step(second, "run_1", ev()) == [3]


async def test_a_closed_store_refuses_calls(target: str, clock: FakeClock) -> None:
    opened = await open_store(target, clock=clock)
    await new_run(opened)
    pending = asyncio.ensure_future(step(opened, "run_1", ev()))
    await asyncio.sleep(0)
    await opened.close()
    assert await pending == [1]  # queued before closing: committed, not dropped
    await opened.close()
    with pytest.raises(StoreError, match="closed"):
        await opened.get_run("run_1")
    with pytest.raises(StoreError, match="closed"):
        await step(opened, "run_1", ev())
