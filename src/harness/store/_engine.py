"""Threads that talk to the database so that the event loop never waits on it.

`Writer` owns the one write connection and commits in groups: coroutines queue their
writes, the thread takes everything queued (up to `max_batch`), runs it in one
transaction, commits once, and resolves every caller's future on its own loop. It writes
for SQLite with `synchronous=FULL`; other SQLite stores write on the event loop's thread
(`_loop_writer.LoopWriter`), PostgreSQL on the loop with asynchronous I/O
(`_async_writer.AsyncWriter`). Under load
one commit serves hundreds of steps. When one write of a batch fails, the batch runs
again with a savepoint around each write, so the failure undoes that write alone.
`Readers` runs queries on a small pool of connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from harness.store._sql import Batch, Db, Driver
from harness.store.errors import StoreError

__all__ = [
    "CommitFailed",
    "Committer",
    "Readers",
    "Settled",
    "WriteFailed",
    "Writer",
    "closed_error",
    "commit_error",
    "translate_error",
]

T = TypeVar("T")
Op = Callable[[Db], Any]
_Outcome = tuple[Any, BaseException | None]
_RETRIES = 5
_log = logging.getLogger(__name__)


class Settled(asyncio.Future[None]):
    """The future of a batch of writes on the loop (`LoopWriter`, `AsyncWriter`).

    Cancelling one caller that waits on it leaves it, and the batch, running.
    """

    def cancel(self, msg: Any | None = None) -> bool:
        """Refuse: the batch's other writers still wait on it."""
        return False


class Committer(Protocol):
    """What the store's writes go through: `Writer` (a thread), `LoopWriter` or `AsyncWriter`."""

    def submit(self, op: Callable[[Db], T]) -> Awaitable[T]:
        """Run `op` in a transaction; the result is known once that transaction committed."""
        ...

    async def stop(self) -> None:
        """Commit what is queued and close the connection."""
        ...


@dataclass(slots=True)
class _Request:
    op: Op
    future: asyncio.Future[Any]
    loop: asyncio.AbstractEventLoop


class Writer:
    """The write connection's thread, committing queued writes in groups.

    Args:
        driver: Opens connections and translates their errors.
        max_batch: At most this many writes per transaction; 1 commits every write alone.
    """

    def __init__(self, driver: Driver, *, max_batch: int = 256) -> None:
        self._driver = driver
        self._max_batch = max(1, max_batch)
        self._queue: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        self._db: Db | None = None
        self._thread = threading.Thread(target=self._main, name="harness-store-writer", daemon=True)
        self._thread.start()

    def submit(self, op: Callable[[Db], T]) -> asyncio.Future[T]:
        """Queue `op`; the future resolves once its transaction committed (or failed)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue.put(_Request(op, future, loop))
        return cast(asyncio.Future[T], future)

    async def stop(self) -> None:
        """Commit what is queued, close the connection and end the thread."""
        self._queue.put(None)
        await asyncio.to_thread(self._thread.join)

    def _main(self) -> None:
        stopping = False
        while not stopping:
            batch, stopping = self._next_batch()
            if batch:
                self._commit(batch)
        if self._db is not None:
            self._db.close()
            self._db = None

    def _next_batch(self) -> tuple[list[_Request], bool]:
        first = self._queue.get()
        if first is None:
            return [], True
        batch = [first]
        while len(batch) < self._max_batch:
            try:
                request = self._queue.get_nowait()
            except queue.Empty:
                break
            if request is None:
                return batch, True
            batch.append(request)
        return batch, False

    def _commit(self, batch: list[_Request]) -> None:
        try:
            outcomes = self._attempts(batch)
        except Exception as exc:  # a bug: still, never leave a caller waiting
            _log.exception("store writer failed")
            outcomes = [(None, exc)] * len(batch)
        _settle(batch, outcomes)

    def _attempts(self, batch: list[_Request]) -> list[_Outcome]:
        """Run the batch's transaction; again after a deadlock or a connection lost early.

        The batch first runs without savepoints (they cost round trips); if one write
        fails, the transaction is rolled back and run again with a savepoint per write.
        """
        attempt, isolate = 1, False
        while True:
            try:
                return self._transaction(batch, isolate)
            except WriteFailed as failed:
                if len(batch) == 1:
                    return [(None, translate_error(self._driver, failed.error))]
                isolate = True
            except CommitFailed as failed:
                known = self._db is not None and self._db.usable()
                self._drop_if_broken()
                return [(None, commit_error(self._driver, failed.error, known)) for _ in batch]
            except Exception as exc:
                broken = self._drop_if_broken()
                if attempt >= _RETRIES or not (broken or self._driver.retry_batch(exc)):
                    return [(None, translate_error(self._driver, exc)) for _ in batch]
                time.sleep(0.005 * attempt)
                attempt += 1

    def _transaction(self, batch: list[_Request], isolate: bool) -> list[_Outcome]:
        if self._db is None:
            self._db = self._driver.connect()
        db = self._db
        db.execute(self._driver.dialect.begin)
        try:
            if isolate:
                outcomes = [self._isolated(db, request.op) for request in batch]
            else:
                shared = Batch(db)
                outcomes = [self._shared(shared, request.op) for request in batch]
                self._shared(shared, lambda _: shared.flush())
            try:
                db.execute("COMMIT")
            except Exception as exc:
                raise CommitFailed(exc) from exc
        except BaseException:
            with contextlib.suppress(Exception):
                db.execute("ROLLBACK")
            raise
        return outcomes

    def _shared(self, db: Db, op: Op) -> _Outcome:
        """Run `op` in the batch's transaction: its failure undoes the whole batch."""
        try:
            return op(db), None
        except Exception as exc:
            if self._driver.retry_batch(exc) or not db.usable():
                raise
            raise WriteFailed(exc) from exc

    def _isolated(self, db: Db, op: Op) -> _Outcome:
        """Run `op` in a savepoint: its failure undoes its writes and no one else's."""
        db.execute("SAVEPOINT step")
        try:
            value = op(db)
        except Exception as exc:
            if self._driver.retry_batch(exc) or not db.usable():
                raise
            db.execute("ROLLBACK TO SAVEPOINT step")
            db.execute("RELEASE SAVEPOINT step")
            return None, translate_error(self._driver, exc)
        db.execute("RELEASE SAVEPOINT step")
        return value, None

    def _drop_if_broken(self) -> bool:
        """Close a broken connection so that the next transaction opens a new one."""
        if self._db is None or self._db.usable():
            return False
        with contextlib.suppress(Exception):
            self._db.close()
        self._db = None
        return True


class WriteFailed(Exception):
    """One write of a group commit failed: the batch runs again, a savepoint per write."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class CommitFailed(Exception):
    """COMMIT itself failed: its outcome may be unknown."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def commit_error(driver: Driver, exc: Exception, known: bool) -> BaseException:
    """The error of a failed COMMIT; when the connection broke, the outcome is unknown."""
    error = translate_error(driver, exc)
    if known or not isinstance(error, StoreError):
        return error
    unknown = StoreError(
        f"{error.message} — the connection broke during COMMIT, so the write may or may "
        "not be stored: read the run back before writing it again"
    )
    unknown.__cause__ = exc
    return unknown


def translate_error(driver: Driver, exc: Exception) -> BaseException:
    """A fresh `StoreError` for `exc` (one per caller: tracebacks are not shared)."""
    error = driver.translate(exc)
    if error is None:
        return exc
    error.__cause__ = exc
    return error


def _settle(batch: list[_Request], outcomes: Sequence[_Outcome]) -> None:
    """Resolve the callers' futures: one wake-up of each event loop per batch."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], _Outcome]]] = {}
    for request, outcome in zip(batch, outcomes, strict=True):
        by_loop.setdefault(request.loop, []).append((request.future, outcome))
    for loop, settled in by_loop.items():
        try:
            loop.call_soon_threadsafe(_resolve, settled)
        except RuntimeError:  # that loop is closed: nobody is waiting any more
            _log.debug("store writes finished after their event loop closed")


def _resolve(settled: list[tuple[asyncio.Future[Any], _Outcome]]) -> None:
    for future, (value, error) in settled:
        if future.done():  # the caller was cancelled; the write itself stands
            continue
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)


class Readers:
    """A few threads, each borrowing a connection of the pool for one read.

    Args:
        driver: Opens connections and translates their errors.
        size: Threads and connections at most.
    """

    def __init__(self, driver: Driver, *, size: int = 2) -> None:
        self._driver = driver
        self._executor = ThreadPoolExecutor(max(1, size), thread_name_prefix="harness-store-read")
        self._idle: queue.SimpleQueue[Db] = queue.SimpleQueue()

    async def run(self, read: Callable[[Db], T]) -> T:
        """Run `read` on a pooled connection in a reader thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, read)

    async def stop(self) -> None:
        """Wait for running reads, then close every connection."""
        await asyncio.to_thread(self._executor.shutdown)
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return

    def _call(self, read: Callable[[Db], T]) -> T:
        try:
            return self._attempt(read)
        except Exception as exc:
            error = self._driver.translate(exc)
            if error is None:
                raise
            raise error from exc

    def _attempt(self, read: Callable[[Db], T]) -> T:
        """Run `read`, once more on a new connection if a pooled one turns out broken."""
        db = self._borrow()
        try:
            return read(db)
        except Exception:
            if db.usable():
                raise
        finally:
            self._give_back(db)
        db = self._driver.connect()
        try:
            return read(db)
        finally:
            self._give_back(db)

    def _borrow(self) -> Db:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            return self._driver.connect()

    def _give_back(self, db: Db) -> None:
        if db.usable():
            self._idle.put(db)
        else:
            db.close()


def closed_error() -> StoreError:
    """The error of a call on a closed store."""
    return StoreError("the store is closed")
