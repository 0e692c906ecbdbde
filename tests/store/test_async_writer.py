"""PostgreSQL's writer on the event loop: batches per iteration, side by side, failures alone."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from harness.core.events import StepStarted
from harness.core.messages import Message
from harness.store import NewEvent, NewRun, StepWrite, StoreConflict, open_store
from harness.store.postgres import PostgresStore

from ._group_commit import Transactions

psycopg = pytest.importorskip("psycopg", reason="pip install -e '.[postgres]'")


def ev(step: int = 1) -> NewEvent:
    return NewEvent(payload=StepStarted(step=step))


def steps(store: PostgresStore, run_ids: list[str]) -> list[asyncio.Future[object]]:
    return [
        asyncio.ensure_future(
            store.append(StepWrite(run_id=r, events=[ev(), ev()], messages=[Message.user(r)]))
        )
        for r in run_ids
    ]


@pytest.fixture
async def store(postgres_url: str) -> AsyncIterator[PostgresStore]:
    opened = await open_store(postgres_url)
    assert isinstance(opened, PostgresStore)
    try:
        yield opened
    finally:
        await opened.close()


async def new_runs(store: PostgresStore, count: int, state: str = "RUNNING") -> list[str]:
    runs = [f"run_{i}" for i in range(count)]
    for run_id in runs:
        await store.create_run(NewRun(run_id=run_id, agent="ops", state=state))
    return runs


async def test_the_writes_of_one_iteration_commit_in_one_transaction(
    store: PostgresStore, postgres_url: str
) -> None:
    runs = await new_runs(store, 20)
    transactions = Transactions(postgres_url)
    written = await asyncio.gather(*steps(store, runs))  # all requested before the first wait
    assert [[e.seq for e in w] for w in written] == [[1, 2]] * 20  # type: ignore[attr-defined]
    assert transactions.count(runs) == 1
    for run_id in runs:
        assert await store.messages(run_id) == [Message.user(run_id)]


async def test_a_write_the_server_refuses_is_undone_alone(store: PostgresStore) -> None:
    runs = await new_runs(store, 6)
    outcomes = await asyncio.gather(
        *steps(store, runs[:3]),
        store.append(StepWrite(run_id="run_missing", events=[ev()])),
        store.create_run(NewRun(run_id="run_0", agent="ops")),
        *steps(store, runs[3:]),
        return_exceptions=True,
    )
    assert isinstance(outcomes[3], StoreConflict)
    assert "there is no run run_missing" in str(outcomes[3])
    assert isinstance(outcomes[4], StoreConflict)
    assert "run run_0 already exists" in str(outcomes[4])
    for run_id in runs:
        assert [e.seq for e in await store.events(run_id)] == [1, 2]
        assert await store.messages(run_id) == [Message.user(run_id)]
    assert await store.get_run("run_missing") is None


async def test_claims_of_one_iteration_never_take_the_same_run(store: PostgresStore) -> None:
    """A claim reads the rows it takes, then takes them: it runs alone, after the ones before."""
    runs = await new_runs(store, 10, state="PENDING")
    first, second = await asyncio.gather(
        store.claim("owner_a", lease_s=60, states={"PENDING"}, limit=10),
        store.claim("owner_b", lease_s=60, states={"PENDING"}, limit=10),
    )
    taken = [r.run_id for r in first] + [r.run_id for r in second]
    assert sorted(taken) == sorted(runs)
    assert {r.owner for r in first} == {"owner_a"}
    assert not second  # the first claim took them all before the second one read


async def test_a_connection_lost_before_commit_loses_and_repeats_nothing(
    postgres_url: str,
) -> None:
    """The writer's connection dies while its batch waits on the server: it runs again."""
    name = f"harness-{uuid.uuid4().hex[:8]}"
    async with await open_store(f"{postgres_url}&application_name={name}") as store:
        assert isinstance(store, PostgresStore)
        runs = await new_runs(store, 5)
        writer = vars(store)["_writer"]
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_advisory_lock(%s)", (HOLD,))
            held = asyncio.ensure_future(
                writer.submit(lambda db: db.execute("SELECT pg_advisory_xact_lock(?)", (HOLD,)))
            )
            writes = steps(store, runs)  # the same batch: behind the lock on the server
            await waiting_for_lock(admin)
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s AND wait_event_type = 'Lock'",
                (name,),
            )
            await asyncio.sleep(0.2)
            await waiting_for_lock(admin)  # the batch again, on a new connection
            admin.execute("SELECT pg_advisory_unlock(%s)", (HOLD,))
        await held
        written = await asyncio.gather(*writes)
        assert [[e.seq for e in w] for w in written] == [[1, 2]] * 5  # type: ignore[attr-defined]
        for run_id in runs:
            assert [e.seq for e in await store.events(run_id)] == [1, 2]
            assert await store.messages(run_id) == [Message.user(run_id)]


HOLD = 7_408_346_612_203


async def waiting_for_lock(admin: psycopg.Connection[tuple[object, ...]]) -> None:
    async with asyncio.timeout(30):
        while not admin.execute(
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        ).fetchall():
            await asyncio.sleep(0.01)


async def test_a_cancelled_caller_does_not_undo_its_write(store: PostgresStore) -> None:
    (run_id,) = await new_runs(store, 1)
    (write,) = steps(store, [run_id])
    await asyncio.sleep(0)  # its write is in the batch
    write.cancel()
    with pytest.raises(asyncio.CancelledError):
        await write
    assert [e.seq for e in await store.events(run_id)] == [1, 2]
    assert await store.messages(run_id) == [Message.user(run_id)]
