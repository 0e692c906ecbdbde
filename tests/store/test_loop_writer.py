"""SQLite's writer on the event loop: against a scripted database that records what it is
told, then on the real SQLite store with another process holding its write lock."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from harness.core.events import StepStarted
from harness.store import NewEvent, NewRun, StepWrite, StoreError
from harness.store._loop_writer import CommitTimes, LoopWriter
from harness.store._sql import Db, Dialect, Row
from harness.store.sqlite import SQLiteStore

DIALECT = Dialect(
    name="fake", begin="BEGIN", for_update="", skip_locked="", serial="", lock_schema=None
)


class Locked(Exception):
    pass


class DriverFailure(Exception):
    pass


class FakeDb:
    """Records every statement; `locked_for` BEGINs fail as if another process held the lock."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.locked_for = 0
        self.full_of: str | None = None  # a COMMIT of a transaction with it fails: no room
        self.fail_on: Callable[[str], bool] = lambda sql: False
        self.broken = False
        self.closed = False

    def execute(self, sql: str, params: Sequence[object] = ()) -> None:
        if sql == "BEGIN" and self.locked_for:
            self.locked_for -= 1
            self.log.append("BEGIN (locked)")
            raise Locked("database is locked")
        if self.fail_on(sql):
            self.broken = True
            raise DriverFailure(f"lost during {sql}")
        if sql == "COMMIT" and self.full_of in self.log[_last(self.log, "BEGIN") :]:
            raise DriverFailure("database or disk is full")
        self.log.append(sql)

    def query(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        self.execute(sql)
        return [(sql,)]

    def usable(self) -> bool:
        return not self.broken

    def close(self) -> None:
        self.closed = True

    def commits(self) -> int:
        return self.log.count("COMMIT")


def _last(log: list[str], sql: str) -> int:
    return len(log) - log[::-1].index(sql) - 1


class FakeDriver:
    @property
    def dialect(self) -> Dialect:
        return DIALECT

    def connect(self) -> Db:
        raise AssertionError("the loop writer is handed its connection")

    def translate(self, exc: Exception) -> StoreError | None:
        if isinstance(exc, Locked):
            return StoreError(f"fake.db is locked by another process: {exc}", retryable=True)
        if isinstance(exc, DriverFailure):
            return StoreError(f"fake store: {exc}")
        return None

    def retry_batch(self, exc: Exception) -> bool:
        return False

    def locked(self, exc: Exception) -> bool:
        return isinstance(exc, Locked)

    def listen(self, post: Callable[[str], None], channels: Sequence[str]) -> None:
        return None


def write(name: str) -> Callable[[Db], str]:
    def op(db: Db) -> str:
        db.execute(name)
        return name

    return op


@pytest.fixture
def db() -> FakeDb:
    return FakeDb()


def writer(db: FakeDb, **options: float) -> LoopWriter:
    max_batch = int(options.pop("max_batch", 256))
    return LoopWriter(FakeDriver(), db, CommitTimes(), max_batch=max_batch, **options)


async def test_writes_of_one_iteration_commit_together(db: FakeDb) -> None:
    w = writer(db)
    names = [f"w{i}" for i in range(30)]
    assert await asyncio.gather(*(w.submit(write(name)) for name in names)) == names
    assert db.log == ["BEGIN", *names, "COMMIT"]
    assert await w.submit(write("later")) == "later"
    assert db.commits() == 2
    await w.stop()
    assert db.closed


async def test_a_batch_of_one_commits_every_write_alone(db: FakeDb) -> None:
    w = writer(db, max_batch=1)
    await asyncio.gather(*(w.submit(write(f"w{i}")) for i in range(20)))
    assert db.commits() == 20
    await w.stop()


async def test_writes_run_on_the_event_loops_thread(db: FakeDb) -> None:
    w = writer(db)
    assert await w.submit(lambda db: threading.current_thread()) is threading.current_thread()
    await w.stop()


def costly(name: str, cpu_s: float) -> Callable[[Db], str]:
    """A write that holds the loop's thread for `cpu_s` of CPU time."""

    def op(db: Db) -> str:
        until = time.thread_time() + cpu_s
        while time.thread_time() < until:
            pass
        return write(name)(db)

    return op


def transactions(log: list[str]) -> list[list[str]]:
    """The writes of each committed transaction, in order."""
    found: list[list[str]] = []
    for sql in log:
        if sql == "BEGIN":
            found.append([])
        elif sql != "COMMIT":
            found[-1].append(sql)
    return found


async def test_a_transaction_that_holds_the_loop_too_long_leaves_the_rest_to_the_next(
    db: FakeDb,
) -> None:
    """Writes of 0.3 ms each: a transaction stops taking them once they ran 1.5 ms."""
    w = writer(db)
    names = [f"w{i}" for i in range(20)]
    assert await asyncio.gather(*(w.submit(costly(name, 0.0003)) for name in names)) == names
    groups = transactions(db.log)
    assert [name for group in groups for name in group] == names
    assert max(len(group) for group in groups) <= 6, groups
    await w.stop()


async def test_after_costly_writes_a_transaction_takes_fewer_then_more_again(
    db: FakeDb,
) -> None:
    """The number a transaction takes comes from the cost of the writes before it."""
    w = writer(db)
    await asyncio.gather(*(w.submit(costly(f"slow{i}", 0.0003)) for i in range(6)))
    slow = len(transactions(db.log))
    names = [f"w{i}" for i in range(200)]
    assert await asyncio.gather(*(w.submit(write(name)) for name in names)) == names
    cheap = transactions(db.log)[slow:]
    assert [name for group in cheap for name in group] == names
    assert len(cheap[0]) < 20, cheap[0]  # sized by the costly writes before it
    assert len(cheap) > 2
    assert len(cheap[-2]) > len(cheap[0])  # and larger as cheap ones commit
    await w.stop()


async def test_a_failing_write_is_undone_alone(db: FakeDb) -> None:
    w = writer(db)

    def failing(db: Db) -> None:
        db.execute("half of it")
        raise ValueError("no")

    good, bad, other = w.submit(write("a")), w.submit(failing), w.submit(write("b"))
    outcomes = await asyncio.gather(good, bad, other, return_exceptions=True)
    assert outcomes[0] == "a"
    assert isinstance(outcomes[1], ValueError)
    assert outcomes[2] == "b"
    assert db.log == [
        *("BEGIN", "a", "half of it", "ROLLBACK"),  # together first, without savepoints
        "BEGIN",
        *("SAVEPOINT step", "a", "RELEASE SAVEPOINT step"),
        *("SAVEPOINT step", "half of it", "ROLLBACK TO SAVEPOINT step", "RELEASE SAVEPOINT step"),
        *("SAVEPOINT step", "b", "RELEASE SAVEPOINT step"),
        "COMMIT",
    ]
    await w.stop()


async def test_a_connection_lost_during_commit_leaves_the_outcome_unknown(db: FakeDb) -> None:
    w = writer(db)
    db.fail_on = lambda sql: sql == "COMMIT"
    outcomes = await asyncio.gather(
        *(w.submit(write(f"w{i}")) for i in range(3)), return_exceptions=True
    )
    assert all(isinstance(o, StoreError) for o in outcomes)
    assert all("may or may not be stored" in str(o) for o in outcomes)
    assert len({id(o) for o in outcomes}) == 3  # one error object per caller
    await w.stop()


async def test_a_commit_the_database_refuses_fails_only_the_write_that_needs_room(
    db: FakeDb,
) -> None:
    w = writer(db)
    db.full_of = "big"
    writes = [w.submit(write(name)) for name in ("small", "big", "other")]
    small, big, other = await asyncio.gather(*writes, return_exceptions=True)
    assert (small, other) == ("small", "other")
    assert isinstance(big, StoreError)
    assert "disk is full" in str(big)
    assert "may or may not" not in str(big)  # the connection works: nothing was written
    assert db.log == [
        *("BEGIN", "small", "big", "other", "ROLLBACK"),  # the COMMIT failed
        *("BEGIN", "small", "COMMIT"),  # then each write alone
        *("BEGIN", "big", "ROLLBACK"),
        *("BEGIN", "other", "COMMIT"),
    ]
    await w.stop()


async def test_a_failed_begin_fails_the_batch_with_a_store_error(db: FakeDb) -> None:
    w = writer(db)
    db.fail_on = lambda sql: sql == "BEGIN"
    with pytest.raises(StoreError, match="lost during BEGIN"):
        await w.submit(write("w"))
    db.fail_on = lambda sql: False
    assert await w.submit(write("again")) == "again"
    await w.stop()


async def test_a_locked_database_is_tried_again_later_with_the_writes_that_came_meanwhile(
    db: FakeDb,
) -> None:
    w = writer(db)
    db.locked_for = 3
    first = asyncio.ensure_future(w.submit(write("first")))
    await asyncio.sleep(0.002)  # the batch met the lock and waits for its next try
    assert db.log[:1] == ["BEGIN (locked)"]
    second = asyncio.ensure_future(w.submit(write("second")))
    assert await asyncio.gather(first, second) == ["first", "second"]
    assert db.log == ["BEGIN (locked)"] * 3 + ["BEGIN", "first", "second", "COMMIT"]
    await w.stop()


async def test_a_lock_held_too_long_fails_every_caller_clearly(db: FakeDb) -> None:
    w = writer(db, lock_wait_s=0.05)
    db.locked_for = 10_000
    outcomes = await asyncio.gather(
        *(w.submit(write(f"w{i}")) for i in range(3)), return_exceptions=True
    )
    assert all(isinstance(o, StoreError) and o.retryable for o in outcomes)
    assert all("locked by another process" in str(o) for o in outcomes)
    assert db.commits() == 0
    db.locked_for = 0
    assert await w.submit(write("later")) == "later"
    await w.stop()


async def test_a_cancelled_caller_does_not_undo_its_write(db: FakeDb) -> None:
    w = writer(db)
    db.locked_for = 2
    waiting = asyncio.ensure_future(w.submit(write("kept")))
    other = asyncio.ensure_future(w.submit(write("other")))
    await asyncio.sleep(0)
    waiting.cancel()
    assert await other == "other"  # the batch went on for the others
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert "kept" in db.log
    await w.stop()


async def test_stop_commits_what_was_queued(db: FakeDb) -> None:
    w = writer(db)
    db.locked_for = 2
    futures = [asyncio.ensure_future(w.submit(write(f"w{i}"))) for i in range(10)]
    await asyncio.sleep(0)
    await w.stop()
    assert [f.result() for f in futures] == [f"w{i}" for i in range(10)]
    assert db.closed


async def test_each_transaction_is_timed() -> None:
    times = CommitTimes(size=4)
    assert times.stats().count == 0
    for ms in (5, 1, 2, 3, 4):  # the rings keep the last four; the maxima are of all
        times.record(ms / 1e3, ms / 2e3)
    stats = times.stats()
    assert (stats.count, stats.p50_ms, stats.p99_ms, stats.max_ms) == (5, 2.0, 3.0, 5.0)
    assert (stats.cpu_p50_ms, stats.cpu_p99_ms, stats.cpu_max_ms) == (1.0, 1.5, 2.5)
    later = times.stats(since=3)  # the last two alone: 3 and 4 ms, maxima of those
    assert (later.count, later.p50_ms, later.p99_ms, later.max_ms) == (5, 3.0, 3.0, 4.0)
    assert later.cpu_max_ms == 2.0
    assert times.stats(since=5).max_ms == 0.0


# The real store: how long commits hold the loop, and another process's lock.


def step(run_id: str = "run_1") -> StepWrite:
    return StepWrite(run_id=run_id, events=[NewEvent(payload=StepStarted(step=1))])


async def test_the_store_reports_how_long_its_commits_held_the_loop(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "harness.db") as store:
        before = store.commit_stats().count  # the migration's
        await store.create_run(NewRun(run_id="run_1", agent="ops"))
        await asyncio.gather(*(store.append(step()) for _ in range(5)))
        stats = store.commit_stats()
    assert stats.count == before + 2
    assert 0 < stats.p50_ms <= stats.p99_ms <= stats.max_ms
    assert 0 < stats.cpu_p50_ms <= stats.cpu_p99_ms <= stats.cpu_max_ms


async def test_a_store_with_full_sync_commits_on_a_writer_thread(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "harness.db", synchronous="FULL") as store:
        await store.create_run(NewRun(run_id="run_1", agent="ops"))
        assert [e.seq for e in await store.append(step())] == [1]
        assert store.commit_stats().count == 0


HOLDER = textwrap.dedent(
    """
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    body = '{"v": 1, "data": {"by": "another process"}}'
    conn.execute("INSERT INTO audit (run_id, ts, body) VALUES ('run_1', 0, ?)", (body,))
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    conn.execute("COMMIT")
    """
)


async def test_another_process_holding_the_lock_does_not_freeze_the_loop(tmp_path: Path) -> None:
    """A process holds the write lock for a second: the loop goes on, then the write lands."""
    path = tmp_path / "harness.db"
    async with SQLiteStore(path) as store:
        await store.create_run(NewRun(run_id="run_1", agent="ops"))
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path), "1.0"], stdout=subprocess.PIPE, text=True
        )
        assert holder.stdout is not None
        assert await asyncio.to_thread(holder.stdout.readline) == "locked\n"
        gaps: list[float] = []

        async def ticker() -> None:
            last = time.monotonic()
            while True:
                await asyncio.sleep(0.005)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        ticking = asyncio.ensure_future(ticker())
        started = time.monotonic()
        written, _ = await asyncio.gather(
            store.append(step()), store.record_audit("run_1", {"by": "this process"})
        )
        waited = time.monotonic() - started
        ticking.cancel()
        assert await asyncio.to_thread(holder.wait, 30) == 0
        holder.stdout.close()
        assert [e.seq for e in written] == [1]
        # kept in commit order: this process's write landed after the other one's COMMIT
        assert await store.audit("run_1") == [{"by": "another process"}, {"by": "this process"}]
        assert len(gaps) >= 10  # the loop ran its timer while the write waited (frozen: none)
        assert max(gaps) < waited / 2  # and was never stuck for the lock's duration
