"""The feed of every run's events in commit order, and its cursors: SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

import pytest

from harness.core.codec import dumps, event_to_dict
from harness.core.events import HintInjected, RunEvent, StepStarted
from harness.store import EventStore, NewEvent, NewRun, StepWrite, open_store
from harness.store._feed import SCAN_ROWS
from harness.store.protocol import FeedPosition

from .conftest import FakeClock


def hint(text: str) -> NewEvent:
    return NewEvent(payload=HintInjected(step=1, hint=text))


def stepped(n: int) -> NewEvent:
    return NewEvent(payload=StepStarted(step=n))


async def run(store: EventStore, run_id: str) -> str:
    await store.create_run(NewRun(run_id=run_id, agent="ops"))
    return run_id


async def write(store: EventStore, run_id: str, *events: NewEvent) -> None:
    await store.append(StepWrite(run_id=run_id, events=events))


def hints(events: list[RunEvent]) -> list[str]:
    return [e.payload.hint for e in events if isinstance(e.payload, HintInjected)]


async def test_the_feed_has_every_runs_events_of_the_types_asked_in_commit_order(
    store: EventStore,
) -> None:
    start = await store.feed_end()
    a, b = await run(store, "run_a"), await run(store, "run_b")
    await write(store, a, hint("a1"), stepped(1))
    await write(store, b, hint("b1"))
    await write(store, a, stepped(2), hint("a2"))
    page = await store.read_feed(start, types=["hint_injected"])
    assert hints([e.event for e in page.entries]) == ["a1", "b1", "a2"]
    assert [(e.event.run_id, e.event.seq) for e in page.entries] == [(a, 1), (b, 1), (a, 4)]
    positions = [e.position for e in page.entries]
    assert positions == sorted(positions)
    assert len(set(positions)) == 3
    assert page.end >= positions[-1]
    assert page.end == await store.feed_end()
    again = await store.read_feed(page.end, types=["hint_injected"])
    assert again.entries == ()
    assert again.end == page.end
    await write(store, b, hint("b2"))
    later = await store.read_feed(page.end, types=["hint_injected", "step_started"])
    assert hints([e.event for e in later.entries]) == ["b2"]


async def test_a_limited_read_ends_at_its_last_event_and_the_next_goes_on(
    store: EventStore,
) -> None:
    start = await store.feed_end()
    a = await run(store, "run_a")
    for n in range(5):
        await write(store, a, hint(str(n)), stepped(n))
    first = await store.read_feed(start, types=["hint_injected"], limit=2)
    assert hints([e.event for e in first.entries]) == ["0", "1"]
    assert first.end == first.entries[-1].position
    rest = await store.read_feed(first.end, types=["hint_injected"], limit=10)
    assert hints([e.event for e in rest.entries]) == ["2", "3", "4"]
    assert (await store.read_feed(start, types=[])).entries == ()


async def test_a_read_far_behind_stops_after_scanning_a_bounded_stretch(
    store: EventStore,
) -> None:
    start = await store.feed_end()
    a = await run(store, "run_a")
    await store.append(StepWrite(run_id=a, events=[stepped(n) for n in range(SCAN_ROWS + 5)]))
    await write(store, a, hint("late"))
    first = await store.read_feed(start, types=["hint_injected"])
    assert first.entries == ()  # one stretch of other events read, the hint not reached
    assert start < first.end < await store.feed_end()
    second = await store.read_feed(first.end, types=["hint_injected"])
    assert hints([e.event for e in second.entries]) == ["late"]


async def test_cursors_start_once_and_move_only_forward(
    store: EventStore, clock: FakeClock
) -> None:
    assert await store.feed_cursors(["t1"]) == {}
    one, two, three = FeedPosition(tx=1, pos=5), FeedPosition(tx=1, pos=9), FeedPosition(tx=2)
    started = await store.start_feed_cursors({"t1": one})
    assert started == {"t1": one}
    assert await store.start_feed_cursors({"t1": three, "t2": two}) == {"t1": one, "t2": two}
    await store.move_feed_cursors({"t1": three, "t2": one})  # t2 would go back: stays
    assert await store.feed_cursors(["t1", "t2", "t3"]) == {"t1": three, "t2": two}
    await store.move_feed_cursors({"t3": two})
    assert (await store.feed_cursors(["t3"]))["t3"] == two
    everyone = await store.feed_cursors()  # every reader, by name
    assert list(everyone.items()) == [("t1", three), ("t2", two), ("t3", two)]


async def test_two_stores_on_one_database_read_the_same_feed(
    target: str, store: EventStore
) -> None:
    start = await store.feed_end()
    async with await open_store(target) as other:
        a = await run(store, "run_a")
        await write(other, a, hint("from the other"))
        await write(store, a, hint("from this one"))
        for reader in (store, other):
            page = await reader.read_feed(start, types=["hint_injected"])
            assert hints([e.event for e in page.entries]) == ["from the other", "from this one"]


async def test_postgres_never_reads_past_a_transaction_still_open(postgres_url: str) -> None:
    """A transaction that began first and commits last: its event is not skipped."""
    psycopg = pytest.importorskip("psycopg")
    async with await open_store(postgres_url) as store:
        start = await store.feed_end()
        a, b = await run(store, "run_a"), await run(store, "run_b")
        late = RunEvent(run_id=a, seq=1, ts=1.0, payload=HintInjected(step=1, hint="late"))
        with psycopg.connect(postgres_url) as slow:
            slow.execute(  # its transaction id is drawn now, before the other commits
                "INSERT INTO events (run_id, seq, ts, type, body) VALUES (%s, 1, 1.0, %s, %s)",
                (a, "hint_injected", dumps(event_to_dict(late))),
            )
            await write(store, b, hint("early"))
            page = await store.read_feed(start, types=["hint_injected"])
            assert page.entries == ()  # "early" waits behind the open transaction
            slow.commit()
        page = await store.read_feed(start, types=["hint_injected"])
        assert hints([e.event for e in page.entries]) == ["late", "early"]
        await asyncio.sleep(0)
