"""SQLite's writer on the event loop's own thread: one transaction per iteration of the loop.

A write adds its operation to the open batch. The first write of an iteration schedules
the flush with `loop.call_soon`, so every write requested during that iteration commits in
one transaction when the loop comes round to it: no writer thread, no hand-off between
threads, and one future per batch that all its callers wait on before each reads its own
outcome. With WAL and `synchronous=NORMAL` a commit does not fsync; it holds the loop for
tens or hundreds of microseconds, and `commit_stats` reports how long.

A transaction takes as many writes as fit in 0.75 ms of the loop thread's CPU by the cost
of the transactions before (at most `max_batch`), and no more once its writes ran twice
that long (a write far costlier than the ones before, or a loaded machine): the rest commit
in the next iteration, so the loop serves its other callbacks between
commits, and a burst of writes makes many short transactions rather than a few long ones.
What the threaded `Writer` guarantees holds here too: a write that fails is undone alone
(the batch runs again with a savepoint per write); a failed COMMIT on a broken connection
reports the outcome as unknown (on a working one, where nothing was written, each write
runs again alone); errors reach the callers as `StoreError`; a caller cancelled while it
waits does not undo its write (its cancellation takes effect once the batch is settled).

The loop never waits for a lock. The connection's busy timeout is zero: when another
process holds SQLite's write lock, BEGIN fails at once and the batch tries again later
(`call_later`, after 1, 2, 4 … 32 ms), writes requested meanwhile joining it; after
`lock_wait_s` its callers get a `StoreError` that says the database is locked.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, TypeVar

from harness.errors import ConfigError
from harness.store._engine import (
    CommitFailed,
    Settled,
    WriteFailed,
    commit_error,
    translate_error,
)
from harness.store._sql import Batch, Db, Driver

__all__ = ["CommitStats", "CommitTimes", "LockingDriver", "LoopWriter"]

T = TypeVar("T")
Op = Callable[[Db], Any]
_Outcome = tuple[Any, BaseException | None]
_log = logging.getLogger(__name__)

_FIRST_RETRY_S: Final = 0.001
_LAST_RETRY_S: Final = 0.032
_BUDGET_S: Final = 0.00075
"""The loop thread's CPU time one transaction should take, COMMIT included."""
_LIMIT_S: Final = 2 * _BUDGET_S
"""The CPU time after which a transaction takes no more writes, whatever it was sized for.

Above the budget, so that writes sized to fit it are not split by the clock's noise or a
busy machine's slower cache; below the 2 ms a commit may hold the loop."""
_LEARN: Final = 0.25
"""The weight of the last transaction in the estimate of a write's cost."""
_RESERVOIR: Final = 4096
"""Commit durations kept for the percentiles: the last this many."""


class LockingDriver(Driver, Protocol):
    """A driver whose database has one write lock that another process may hold."""

    def locked(self, exc: Exception) -> bool:
        """Whether `exc` means another connection holds the write lock."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class CommitStats:
    """How long the writer's transactions held the event loop, in milliseconds.

    Wall time is what the loop's other callbacks waited; on a busy machine it includes the
    time the operating system ran other processes, which the thread's CPU time leaves out.
    """

    count: int
    """Transactions run since the store was made (committed or rolled back)."""
    p50_ms: float
    """The median wall time of the last 4,096."""
    p99_ms: float
    """The 99th percentile wall time of the last 4,096."""
    max_ms: float
    """The longest wall time of all."""
    cpu_p50_ms: float
    """The median CPU time of the loop's thread, of the last 4,096."""
    cpu_p99_ms: float
    """The 99th percentile CPU time of the loop's thread, of the last 4,096."""
    cpu_max_ms: float
    """The most CPU time of all."""


class CommitTimes:
    """Durations of transactions in fixed rings of floats: nothing allocated per commit."""

    def __init__(self, size: int = _RESERVOIR) -> None:
        self._wall = array("d", bytes(8 * size))
        self._cpu = array("d", bytes(8 * size))
        self._count = 0
        self._max = self._max_cpu = 0.0

    def record(self, wall_s: float, cpu_s: float) -> None:
        """Keep one transaction's wall and CPU time."""
        slot = self._count % len(self._wall)
        self._wall[slot], self._cpu[slot] = wall_s, cpu_s
        self._count += 1
        if wall_s > self._max:  # comparisons, not `max`: this runs at every commit
            self._max = wall_s
        if cpu_s > self._max_cpu:
            self._max_cpu = cpu_s

    def stats(self, since: int = 0) -> CommitStats:
        """Count, median, 99th percentile (of the rings) and maximum (of all).

        Args:
            since: Only the transactions after the first `since` (a `count` read before),
                of those the rings still hold: their maxima are then of those.
        """
        if since <= 0:
            kept = min(self._count, len(self._wall))
            wall, cpu = sorted(self._wall[:kept]), sorted(self._cpu[:kept])
            most, most_cpu = self._max, self._max_cpu
        else:
            wall, cpu = self._since(self._wall, since), self._since(self._cpu, since)
            most, most_cpu = (wall[-1], cpu[-1]) if wall else (0.0, 0.0)
        return CommitStats(
            count=self._count,
            p50_ms=_at(wall, 0.5),
            p99_ms=_at(wall, 0.99),
            max_ms=most * 1e3,
            cpu_p50_ms=_at(cpu, 0.5),
            cpu_p99_ms=_at(cpu, 0.99),
            cpu_max_ms=most_cpu * 1e3,
        )

    def _since(self, ring: array[float], since: int) -> list[float]:
        """The durations of transactions `since`… still in `ring`, sorted."""
        size = len(ring)
        first = max(since, self._count - size)
        return sorted(ring[n % size] for n in range(first, self._count))


def _at(ordered: list[float], quantile: float) -> float:
    """The value at `quantile` of sorted seconds, in milliseconds (0 when there are none)."""
    if not ordered:
        return 0.0
    return ordered[int((len(ordered) - 1) * quantile)] * 1e3


@dataclass(slots=True, eq=False)
class _Batch:
    """Writes that commit together, and each one's outcome once it is known."""

    done: Settled
    ops: list[Op] = field(default_factory=list[Op])
    values: list[Any] = field(default_factory=list[Any])
    errors: list[BaseException | None] = field(default_factory=list[BaseException | None])
    begun: bool = False
    """A transaction of it ran: writes requested later wait for the next batch."""
    locked_since: float | None = None
    tries: int = 0


class _CommitLost(CommitFailed):
    """COMMIT failed after the transaction ran its first `ran` writes."""

    def __init__(self, error: Exception, ran: int) -> None:
        super().__init__(error)
        self.ran = ran


class _Locked(Exception):
    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class LoopWriter:
    """Runs writes on the event loop's thread, one transaction per iteration of the loop.

    Args:
        driver: Translates the database's errors and recognises its lock.
        db: The write connection, with a busy timeout of zero.
        times: Where each transaction's duration goes.
        max_batch: At most this many writes per transaction; 1 commits every write alone.
        lock_wait_s: How long a batch waits for another process's write lock.
    """

    def __init__(
        self,
        driver: LockingDriver,
        db: Db,
        times: CommitTimes,
        *,
        max_batch: int = 256,
        lock_wait_s: float = 5.0,
    ) -> None:
        self._driver = driver
        self._begin = driver.dialect.begin
        self._db = db
        self._times = times
        self._max_batch = max(1, max_batch)
        self._lock_wait_s = lock_wait_s
        self._batches: deque[_Batch] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._write_cpu_s = 0.0
        """What one write has cost lately: its share of the CPU time of its transaction."""

    async def submit(self, op: Callable[[Db], T]) -> T:
        """Run `op` in this iteration's transaction; returns once that committed."""
        batch = self._open_batch()
        index = len(batch.ops)
        batch.ops.append(op)
        await batch.done
        error = batch.errors[index]
        if error is not None:
            raise error
        return batch.values[index]

    async def stop(self) -> None:
        """Commit what is queued, then close the connection."""
        if self._batches:
            await self._batches[-1].done
        await asyncio.to_thread(self._db.close)

    def _open_batch(self) -> _Batch:
        """The batch a new write joins: the last one, unless it began or is full."""
        if self._batches:
            last = self._batches[-1]
            if not last.begun and len(last.ops) < self._max_batch:
                return last
        loop = asyncio.get_running_loop()
        if self._batches and loop is not self._loop:
            raise ConfigError(
                "a SQLite store was written from two event loops at once; use it from one"
            )
        batch = _Batch(done=Settled(loop=loop))
        self._batches.append(batch)
        if len(self._batches) == 1:
            self._loop = loop
            loop.call_soon(self._flush)
        return batch

    def _flush(self) -> None:
        """Commit the first batch, or as much of it as one transaction takes."""
        batch = self._batches[0]
        try:
            locked = self._commit_next(batch)
        except Exception as exc:  # a bug: still, never leave a caller waiting
            _log.exception("store writer failed")
            locked, bug = None, exc
            _fail_rest(batch, lambda: bug)
        if locked is not None:
            self._wait_for_lock(batch, locked)
        elif len(batch.values) < len(batch.ops):
            self._later(0.0)
        else:
            self._settle(batch)

    def _settle(self, batch: _Batch) -> None:
        """Wake the batch's callers, and turn to the next batch."""
        self._batches.popleft()
        batch.done.set_result(None)
        if self._batches:
            self._later(0.0)

    def _commit_next(self, batch: _Batch) -> Exception | None:
        """Run the batch's next transaction; the lock error when another process holds it."""
        done = len(batch.values)
        ops = batch.ops[done : done + self._group_size()]
        collecting = gc.isenabled()
        if collecting:  # a collection due meanwhile runs after the COMMIT, not inside it
            gc.disable()
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            outcomes = self._attempts(ops)
        except _Locked as locked:
            return locked.error
        except Exception as exc:
            outcomes = [(None, translate_error(self._driver, exc)) for _ in ops]
        finally:
            if collecting:
                gc.enable()
        cpu = time.thread_time() - cpu
        self._times.record(time.perf_counter() - started, cpu)
        if len(outcomes) > 1:  # one write alone (a migration, a claim) says little of the rest
            self._write_cpu_s += _LEARN * (cpu / len(outcomes) - self._write_cpu_s)
        batch.begun, batch.locked_since, batch.tries = True, None, 0
        for value, error in outcomes:
            batch.values.append(value)
            batch.errors.append(error)
        return None

    def _group_size(self) -> int:
        """How many writes the next transaction takes: what fits in `_BUDGET_S`.

        By the cost per write of the transactions of several writes before; with nothing
        to go by, up to `max_batch`. Never fewer than two (unless `max_batch` is one), so
        that transactions of several writes keep the estimate up to date.
        """
        if self._write_cpu_s <= 0.0:
            return self._max_batch
        return min(self._max_batch, max(2, int(_BUDGET_S / self._write_cpu_s)))

    def _attempts(self, ops: list[Op]) -> list[_Outcome]:
        """The batch's outcomes: together first, then a savepoint per write if one failed."""
        try:
            return self._transaction(ops, isolate=False)
        except WriteFailed as failed:
            if len(ops) == 1:
                return [(None, translate_error(self._driver, failed.error))]
        except _CommitLost as lost:
            return self._after_lost_commit(ops[: lost.ran], lost)
        try:
            return self._transaction(ops, isolate=True)
        except _CommitLost as lost:
            return self._after_lost_commit(ops[: lost.ran], lost)

    def _after_lost_commit(self, ops: list[Op], lost: _CommitLost) -> list[_Outcome]:
        """The outcomes after a failed COMMIT: unknown on a broken connection.

        On a working one nothing was written, and each write runs again alone, so that one
        the database refuses (a full disk) fails by itself and one that needs no room
        still commits.
        """
        known = self._db.usable()
        if len(ops) == 1 or not known:
            return [(None, commit_error(self._driver, lost.error, known)) for _ in ops]
        return [self._alone(op) for op in ops]

    def _alone(self, op: Op) -> _Outcome:
        try:
            return self._transaction([op], isolate=False)[0]
        except WriteFailed as failed:
            return None, translate_error(self._driver, failed.error)
        except _CommitLost as lost:
            return None, commit_error(self._driver, lost.error, self._db.usable())
        except _Locked as locked:
            return None, translate_error(self._driver, locked.error)
        except Exception as exc:
            return None, translate_error(self._driver, exc)

    def _transaction(self, ops: list[Op], *, isolate: bool) -> list[_Outcome]:
        db = self._db
        try:
            db.execute(self._begin)
        except Exception as exc:
            if self._driver.locked(exc):
                raise _Locked(exc) from exc
            raise
        try:
            if isolate:
                outcomes = self._run(ops)
            else:
                outcomes = self._run_shared(ops)
            self._commit(len(outcomes))
        except BaseException:
            with contextlib.suppress(Exception):
                db.execute("ROLLBACK")
            raise
        return outcomes

    def _run(self, ops: list[Op]) -> list[_Outcome]:
        """Run `ops` in order, each isolated, stopping early once they took `_LIMIT_S` of CPU.

        That happens when a write costs far more than the ones before; the rest wait for
        the next transaction.
        """
        outcomes, last = list[_Outcome](), len(ops) - 1
        started = time.thread_time() if last else 0.0  # a clock read costs about 1 us
        for n, op in enumerate(ops):
            outcomes.append(self._isolated(op))
            if n < last and time.thread_time() - started > _LIMIT_S:
                break
        return outcomes

    def _run_shared(self, ops: list[Op]) -> list[_Outcome]:
        """`_run` with every op in one `Batch`, whose rows go out before the COMMIT.

        A transaction of one write needs no `Batch`: there are no other writes' rows to
        send with its own. Written out rather than through `_run` with a closure per call:
        this runs for every transaction.
        """
        outcomes, last = list[_Outcome](), len(ops) - 1
        try:
            if not last:  # one write (a run alone): its rows go out as it makes them
                outcomes.append((ops[0](self._db), None))
                return outcomes
            shared, started = Batch(self._db), time.thread_time()
            for n, op in enumerate(ops):
                outcomes.append((op(shared), None))
                if n < last and time.thread_time() - started > _LIMIT_S:
                    break
            shared.flush()
        except Exception as exc:  # one write failed: the whole batch is undone
            if self._driver.locked(exc):
                raise _Locked(exc) from exc
            if not self._db.usable():
                raise
            raise WriteFailed(exc) from exc
        return outcomes

    def _commit(self, ran: int) -> None:
        try:
            self._db.execute("COMMIT")
        except Exception as exc:
            if self._driver.locked(exc):
                raise _Locked(exc) from exc
            raise _CommitLost(exc, ran) from exc

    def _isolated(self, op: Op) -> _Outcome:
        """Run `op` in a savepoint: its failure undoes its writes and no one else's."""
        db = self._db
        db.execute("SAVEPOINT step")
        try:
            value = op(db)
        except Exception as exc:
            if self._driver.locked(exc):
                raise _Locked(exc) from exc
            if not db.usable():
                raise
            db.execute("ROLLBACK TO SAVEPOINT step")
            db.execute("RELEASE SAVEPOINT step")
            return None, translate_error(self._driver, exc)
        db.execute("RELEASE SAVEPOINT step")
        return value, None

    def _wait_for_lock(self, batch: _Batch, error: Exception) -> None:
        """Try the batch again soon, or fail it once it waited `lock_wait_s`."""
        assert self._loop is not None
        now = self._loop.time()
        if batch.locked_since is None:
            batch.locked_since = now
        left = batch.locked_since + self._lock_wait_s - now
        if left <= 0:
            _fail_rest(batch, lambda: translate_error(self._driver, error))
            self._settle(batch)
            return
        self._later(min(_FIRST_RETRY_S * 2**batch.tries, _LAST_RETRY_S, left))
        batch.tries += 1

    def _later(self, delay_s: float) -> None:
        assert self._loop is not None
        if delay_s:
            self._loop.call_later(delay_s, self._flush)
        else:
            self._loop.call_soon(self._flush)


def _fail_rest(batch: _Batch, error: Callable[[], BaseException]) -> None:
    """Give every write of the batch without an outcome its own error."""
    for _ in range(len(batch.ops) - len(batch.values)):
        batch.values.append(None)
        batch.errors.append(error())
