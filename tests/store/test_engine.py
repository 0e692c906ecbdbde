"""The writer and reader threads: against a scripted database that records what it is told,
and group commit on the real SQLite store."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.core.events import StepStarted
from harness.store import NewEvent, NewRun, StepWrite, StoreError
from harness.store._engine import Readers, Writer
from harness.store._sql import Db, Dialect, Row
from harness.store.sqlite import SQLiteStore

from ._group_commit import Transactions, held_writer

DIALECT = Dialect(
    name="fake", begin="BEGIN", for_update="", skip_locked="", serial="", lock_schema=None
)


class Deadlock(Exception):
    pass


class DriverFailure(Exception):
    pass


class FakeDb:
    def __init__(self, log: list[str], fail_on: Callable[[str], bool]) -> None:
        self.log = log
        self.fail_on = fail_on
        self.broken = False
        self.closed = False

    def execute(self, sql: str, params: Sequence[object] = ()) -> None:
        if self.broken:
            raise DriverFailure("connection is broken")
        if self.fail_on(sql):
            self.broken = True
            raise DriverFailure(f"lost during {sql}")
        self.log.append(sql)

    def query(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        self.execute(sql)
        return [(sql,)]

    def usable(self) -> bool:
        return not self.broken

    def close(self) -> None:
        self.closed = True


class FakeDriver:
    def __init__(self) -> None:
        self.log: list[str] = []
        self.connections: list[FakeDb] = []
        self.refuse = False
        self.fail_on: Callable[[str], bool] = lambda sql: False

    @property
    def dialect(self) -> Dialect:
        return DIALECT

    def connect(self) -> Db:
        if self.refuse:
            raise DriverFailure("connection refused")
        db = FakeDb(self.log, self.fail_on)
        self.connections.append(db)
        return db

    def translate(self, exc: Exception) -> StoreError | None:
        if isinstance(exc, DriverFailure | Deadlock):
            return StoreError(f"fake store: {exc}", retryable=True)
        return None

    def retry_batch(self, exc: Exception) -> bool:
        return isinstance(exc, Deadlock)

    def commits(self) -> int:
        return self.log.count("COMMIT")


def write(name: str) -> Callable[[Db], str]:
    def op(db: Db) -> str:
        db.execute(name)
        return name

    return op


async def hold_writer(writer: Writer) -> tuple[threading.Event, asyncio.Future[Any]]:
    """Keep the writer thread busy until the event is set, so that requests pile up."""
    release, started = threading.Event(), threading.Event()

    def blocker(db: Db) -> str:
        started.set()
        release.wait(5)
        return "held"

    held = writer.submit(blocker)
    await asyncio.to_thread(started.wait, 5)
    return release, held


@pytest.fixture
def driver() -> FakeDriver:
    return FakeDriver()


async def test_queued_writes_commit_together(driver: FakeDriver) -> None:
    writer = Writer(driver, max_batch=256)
    release, held = await hold_writer(writer)
    futures = [writer.submit(write(f"w{i}")) for i in range(200)]
    release.set()
    assert await asyncio.gather(held, *futures) == ["held", *(f"w{i}" for i in range(200))]
    assert driver.commits() == 2
    assert "SAVEPOINT step" not in driver.log
    await writer.stop()
    assert driver.connections[0].closed


async def test_a_batch_of_one_commits_every_write_alone(driver: FakeDriver) -> None:
    writer = Writer(driver, max_batch=1)
    release, held = await hold_writer(writer)
    futures = [writer.submit(write(f"w{i}")) for i in range(20)]
    release.set()
    await asyncio.gather(held, *futures)
    assert driver.commits() == 21
    assert "SAVEPOINT step" not in driver.log
    await writer.stop()


async def test_writes_run_on_the_writer_thread(driver: FakeDriver) -> None:
    writer = Writer(driver)
    name = await writer.submit(lambda db: threading.current_thread().name)
    assert name == "harness-store-writer"
    await writer.stop()


async def test_a_failing_write_is_undone_alone(driver: FakeDriver) -> None:
    writer = Writer(driver)
    release, held = await hold_writer(writer)

    def failing(db: Db) -> None:
        db.execute("half of it")
        raise ValueError("no")

    good, bad, other = writer.submit(write("a")), writer.submit(failing), writer.submit(write("b"))
    release.set()
    assert await good == "a"
    with pytest.raises(ValueError, match="no"):
        await bad
    assert await other == "b"
    await held
    tail = driver.log[driver.log.index("BEGIN", 1) :]
    assert tail == [
        *("BEGIN", "a", "half of it", "ROLLBACK"),  # together first, without savepoints
        "BEGIN",
        *("SAVEPOINT step", "a", "RELEASE SAVEPOINT step"),
        *("SAVEPOINT step", "half of it", "ROLLBACK TO SAVEPOINT step", "RELEASE SAVEPOINT step"),
        *("SAVEPOINT step", "b", "RELEASE SAVEPOINT step"),
        "COMMIT",
    ]
    await writer.stop()


async def test_a_deadlocked_batch_runs_again(driver: FakeDriver) -> None:
    writer = Writer(driver)
    calls: list[int] = []

    def flaky(db: Db) -> str:
        calls.append(1)
        db.execute("x")
        if len(calls) < 3:
            raise Deadlock("deadlock detected")
        return "done"

    assert await writer.submit(flaky) == "done"
    assert len(calls) == 3
    assert driver.log == ["BEGIN", "x", "ROLLBACK"] * 2 + ["BEGIN", "x", "COMMIT"]
    await writer.stop()


async def test_a_lasting_deadlock_is_reported(driver: FakeDriver) -> None:
    writer = Writer(driver)

    def stuck(db: Db) -> None:
        raise Deadlock("deadlock detected")

    with pytest.raises(StoreError, match="deadlock") as caught:
        await writer.submit(stuck)
    assert isinstance(caught.value.__cause__, Deadlock)
    await writer.stop()


async def test_a_connection_lost_before_commit_is_replaced_and_the_batch_rerun(
    driver: FakeDriver,
) -> None:
    writer = Writer(driver)
    assert await writer.submit(write("first")) == "first"
    lost = iter([True])
    driver.connections[0].fail_on = lambda sql: sql == "second" and next(lost, False)
    assert await writer.submit(write("second")) == "second"
    assert len(driver.connections) == 2
    assert driver.connections[0].closed
    await writer.stop()


async def test_a_connection_lost_during_commit_leaves_the_outcome_unknown(
    driver: FakeDriver,
) -> None:
    writer = Writer(driver)
    await writer.submit(write("first"))
    driver.connections[0].fail_on = lambda sql: sql == "COMMIT"
    with pytest.raises(StoreError, match="may or may not be stored"):
        await writer.submit(write("second"))
    assert await writer.submit(write("third")) == "third"
    await writer.stop()


async def test_an_unreachable_database_fails_every_write_until_it_is_back(
    driver: FakeDriver,
) -> None:
    driver.refuse = True
    writer = Writer(driver)
    outcomes = await asyncio.gather(
        *(writer.submit(write(f"w{i}")) for i in range(5)), return_exceptions=True
    )
    assert all(isinstance(o, StoreError) and o.retryable for o in outcomes)
    assert len({id(o) for o in outcomes}) == 5  # one error object per caller
    driver.refuse = False
    assert await writer.submit(write("later")) == "later"
    await writer.stop()


async def test_a_cancelled_caller_does_not_undo_its_write(driver: FakeDriver) -> None:
    writer = Writer(driver)
    release, held = await hold_writer(writer)
    waiting = asyncio.ensure_future(writer.submit(write("kept")))
    await asyncio.sleep(0)
    waiting.cancel()
    release.set()
    await held
    await writer.stop()
    assert "kept" in driver.log


async def test_stop_commits_what_was_queued(driver: FakeDriver) -> None:
    writer = Writer(driver)
    futures = [writer.submit(write(f"w{i}")) for i in range(10)]
    await writer.stop()
    assert [f.result() for f in futures] == [f"w{i}" for i in range(10)]


async def test_readers_reuse_connections_and_close_them(driver: FakeDriver) -> None:
    readers = Readers(driver, size=2)
    results = await asyncio.gather(*(readers.run(lambda db: db.query("q")) for _ in range(20)))
    assert results == [[("q",)]] * 20
    assert 1 <= len(driver.connections) <= 2
    await readers.stop()
    assert all(db.closed for db in driver.connections)


async def test_a_reader_replaces_a_broken_connection_once(driver: FakeDriver) -> None:
    readers = Readers(driver, size=1)
    await readers.run(lambda db: db.query("warm up"))
    driver.connections[0].broken = True
    assert await readers.run(lambda db: db.query("q")) == [("q",)]
    assert len(driver.connections) == 2
    driver.refuse = True
    driver.connections[1].broken = True
    with pytest.raises(StoreError, match="connection refused"):
        await readers.run(lambda db: db.query("q"))
    driver.refuse = False
    with pytest.raises(KeyError):
        await readers.run(lambda db: {}["missing"])
    await readers.stop()


# The same group commit on the real SQLite store: its writes, its transactions.


async def sqlite_store(tmp_path: Path, max_batch: int, runs: int) -> tuple[SQLiteStore, list[str]]:
    store = SQLiteStore(tmp_path / "harness.db", max_batch=max_batch)
    await store.open()
    run_ids = [f"run_{i}" for i in range(runs)]
    for run_id in run_ids:
        await store.create_run(NewRun(run_id=run_id, agent="ops"))
    return store, run_ids


def step(run_id: str) -> StepWrite:
    return StepWrite(run_id=run_id, events=[NewEvent(payload=StepStarted(step=1))])


async def queued(store: SQLiteStore, writes: list[StepWrite]) -> list[Any]:
    """Queue every write while the writer is busy, then let them commit."""
    async with held_writer(store):
        futures = [asyncio.ensure_future(store.append(w)) for w in writes]
        await asyncio.sleep(0)  # each append queues its write before it first waits
    return await asyncio.gather(*futures, return_exceptions=True)


@pytest.mark.parametrize(("max_batch", "commits"), [(256, 1), (1, 8)])
async def test_queued_writes_commit_together_on_sqlite(
    tmp_path: Path, max_batch: int, commits: int
) -> None:
    # 8 writes: SQLite's writer leaves writes to a next transaction once the first ones held
    # the event loop for 1.5 ms of CPU, which 32 cold writes took on a slow machine
    store, run_ids = await sqlite_store(tmp_path, max_batch, runs=4)
    transactions = Transactions(str(store.path))
    outcomes = await queued(store, [step(run_id) for run_id in run_ids * 2])
    assert [[e.seq for e in o] for o in outcomes] == [[1]] * 4 + [[2]] * 4
    assert transactions.count(run_ids) == commits
    await store.close()


async def test_a_failing_write_is_undone_alone_on_sqlite(tmp_path: Path) -> None:
    store, run_ids = await sqlite_store(tmp_path, 256, runs=2)
    transactions = Transactions(str(store.path))
    bad = StepWrite(
        run_id="run_1", events=[NewEvent(payload=StepStarted(step=1))], expect_states=["X"]
    )
    good, failed, other = await queued(store, [step("run_0"), bad, step("run_1")])
    assert isinstance(failed, Exception)
    assert [e.seq for e in good] == [e.seq for e in other] == [1]
    assert transactions.count(run_ids) == 1  # the batch ran again, without the failed write
    assert [e.seq for e in await store.events("run_1")] == [1]
    await store.close()
