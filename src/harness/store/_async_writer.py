"""PostgreSQL's writer on the event loop: asynchronous I/O, one pipelined transaction per batch.

The store's writes are written once, as plain functions of a `Db` that run a statement and
get its rows back at once. On an asynchronous connection the rows come later, so each
write runs as a *script*: it runs until it asks for rows it has not got, which suspends it
(`_Suspend`); the statements it issued meanwhile are sent. Once the rows came back it runs
again from its start, every statement it had issued answered from what it recorded, until
it asks for more or returns. Writes are deterministic functions of their arguments and of
those rows, so each run takes the same path as the one before.

The writes requested during one iteration of the loop form a batch, as on SQLite: the
first of them starts the batch's task, which begins the next iteration. All the writes of
a batch run side by side in one transaction: every write runs until it suspends, then all
their statements go to the server in one pipeline with one sync (one round trip), then each
runs on. A batch of appends costs two round trips: one for BEGIN and every write's
conditional UPDATE, one for their rows (the inserts of all writes together, as `Batch`
gathers them) and COMMIT. While a batch waits for the server the loop serves its other
callbacks, and the writes requested meanwhile form the next batch.

Writes that read rows and then decide what to write (`claim`) are marked `Alone`: they run
by themselves, between the writes before and after them, as a serial transaction would.
What `Writer` guarantees holds here: a write that fails is undone alone (the batch runs
again with a savepoint per write, one write after another); a deadlock or a connection
lost before COMMIT was sent runs the batch again (on a new connection); a connection lost
with the COMMIT in flight reports the outcome as unknown; a caller cancelled while it
waits does not undo its write (its cancellation takes effect once the batch is settled).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Protocol, TypeVar

from harness.store._engine import Settled, WriteFailed, commit_error, translate_error
from harness.store._sql import Batch, Db, Driver, Row, insert_rows
from harness.store.errors import StoreError

__all__ = ["Alone", "AsyncWriter", "Pipe", "Statement"]

T = TypeVar("T")
Op = Callable[[Db], Any]
_Outcome = tuple[Any, BaseException | None]
_RETRIES: Final = 5
_BUDGET_S: Final = 0.001
"""How long the writer runs writes before it lets the loop serve its other callbacks."""
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of a pipeline, with `?` placeholders."""

    sql: str
    """The statement."""
    params: Sequence[object]
    """Its parameters."""
    rows: bool
    """Whether its rows are wanted."""


class Pipe(Protocol):
    """One asynchronous connection in autocommit mode that sends statements in pipelines."""

    async def send(self, statements: Sequence[Statement]) -> list[list[Row] | None]:
        """Send `statements` in order and wait for the server once; the rows of each.

        Raises:
            Exception: The driver's error of the first statement that failed.
        """
        ...

    def usable(self) -> bool:
        """False once the connection is broken and must be replaced."""
        ...

    async def close(self) -> None:
        """Close the connection."""
        ...


@dataclass(frozen=True, slots=True)
class Alone(Generic[T]):
    """A write that runs by itself in its batch: it reads rows, then decides what to write.

    The other writers call it as the write it wraps.
    """

    op: Callable[[Db], T]
    """The write."""

    def __call__(self, db: Db) -> T:
        return self.op(db)


class _Suspend(BaseException):
    """A script asked for rows that have not come back yet (no `except Exception` takes it)."""


class _Outbox:
    """A `Db` that keeps statements for the next pipeline instead of running them."""

    def __init__(self, pipe: Pipe) -> None:
        self.pipe = pipe
        self.statements: list[Statement] = []
        self.sent = 0
        """Statements taken to be sent so far."""

    def execute(self, sql: str, params: Sequence[object] = ()) -> None:
        self.statements.append(Statement(sql, params, False))

    def query(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        self.statements.append(Statement(sql, params, True))
        return []

    def usable(self) -> bool:
        return self.pipe.usable()

    def close(self) -> None:
        return None

    def take(self) -> list[Statement]:
        statements, self.statements = self.statements, []
        self.sent += len(statements)
        return statements

    def position(self) -> int:
        """Where the next statement will be, counting those sent."""
        return self.sent + len(self.statements)

    def discard_from(self, position: int) -> bool:
        """Forget the unsent statements from `position` on; whether some before it were sent.

        Returns:
            True when the statement at `position` was sent already.
        """
        if position >= self.sent:
            del self.statements[position - self.sent :]
            return False
        self.statements.clear()
        return True


class _Script(Batch):
    """The `Db` one write runs on, replaying what it did before its last suspension.

    A `Batch`, so that `insert_rows` hands it rows to keep; it passes them (and every
    statement) on to `shared`: the transaction's `Batch` over the outbox, or the outbox.
    """

    def __init__(self, shared: Db, outbox: _Outbox) -> None:
        super().__init__(outbox)
        self._shared = shared
        self._outbox = outbox
        self._answers: list[list[Row] | None] = []
        """What each call of the write gave back so far (`None` for all but queries)."""
        self._at = 0
        self.waiting: int | None = None
        """The outbox index of the statement whose rows the write waits for."""

    def restart(self) -> None:
        self._at = 0

    def answer(self, rows: list[Row] | None) -> None:
        """Hand the write the rows it waited for."""
        self._answers.append(rows or [])
        self.waiting = None

    def execute(self, sql: str, params: Sequence[object] = ()) -> None:
        if self._replayed():
            return
        self._shared.execute(sql, params)
        self._answers.append(None)
        self._at += 1

    def query(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        if self._at < len(self._answers):
            rows = self._answers[self._at]
            self._at += 1
            return rows or []
        self._shared.query(sql, params)
        self.waiting = len(self._outbox.statements) - 1
        raise _Suspend

    def defer(self, head: str, rows: Sequence[Sequence[object]]) -> None:
        if self._replayed():
            return
        insert_rows(self._shared, head, rows)
        self._answers.append(None)
        self._at += 1

    def flush(self) -> None:
        return None  # the transaction's `Batch` sends the rows, before COMMIT

    def usable(self) -> bool:
        return self._outbox.usable()

    def _replayed(self) -> bool:
        if self._at < len(self._answers):
            self._at += 1
            return True
        return False


@dataclass(slots=True, eq=False)
class _Batch:
    done: Settled
    ops: list[Op] = field(default_factory=list[Op])
    outcomes: list[_Outcome] = field(default_factory=list[_Outcome])


class _LostCommit(Exception):
    """The connection failed while COMMIT was in flight, or COMMIT itself failed."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class AsyncWriter:
    """Runs writes on the event loop over an asynchronous connection, a batch per iteration.

    Args:
        driver: The dialect and the database's errors (its connections are not used).
        connect: Opens a new connection (the first, and one after each that broke).
        max_batch: At most this many writes per transaction; 1 commits every write alone.
    """

    def __init__(
        self, driver: Driver, connect: Callable[[], Awaitable[Pipe]], *, max_batch: int = 256
    ) -> None:
        self._driver = driver
        self._connect = connect
        self._max_batch = max(1, max_batch)
        self._pipe: Pipe | None = None
        self._queue: deque[_Batch] = deque()
        self._open: _Batch | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Open the connection now, so that a server that cannot be reached fails `open`."""
        self._pipe = await self._connect()

    async def submit(self, op: Callable[[Db], T]) -> T:
        """Run `op` in this iteration's transaction; returns once that committed."""
        batch = self._open_batch()
        index = len(batch.ops)
        batch.ops.append(op)
        await batch.done
        value, error = batch.outcomes[index]
        if error is not None:
            raise error
        return value

    async def stop(self) -> None:
        """Commit what is queued, then close the connection."""
        while self._task is not None:
            await asyncio.shield(self._task)
        pipe, self._pipe = self._pipe, None
        if pipe is not None:
            await pipe.close()

    def _open_batch(self) -> _Batch:
        batch = self._open
        if batch is not None and len(batch.ops) < self._max_batch:
            return batch
        loop = asyncio.get_running_loop()
        batch = self._open = _Batch(done=Settled(loop=loop))
        self._queue.append(batch)
        if self._task is None:
            self._task = loop.create_task(self._drain(), name="harness-store-writer")
        return batch

    async def _drain(self) -> None:
        """Commit batch after batch until none is queued."""
        try:
            while self._queue:
                batch = self._queue[0]
                if batch is self._open:
                    self._open = None  # writes requested from now on form the next batch
                try:
                    batch.outcomes = await self._attempts(batch.ops)
                except Exception as exc:  # a bug: still, never leave a caller waiting
                    _log.exception("store writer failed")
                    batch.outcomes = [(None, exc)] * len(batch.ops)
                self._queue.popleft()
                batch.done.set_result(None)
        finally:
            self._task = None
            self._abandon()

    def _abandon(self) -> None:
        """Fail the batches left when the writer's task was cancelled (its loop closing)."""
        while self._queue:
            batch = self._queue.popleft()
            if batch is self._open:
                self._open = None
            error = StoreError("the store's writer stopped before this write committed")
            batch.outcomes = [(None, error)] * len(batch.ops)
            if not batch.done.done():
                batch.done.set_result(None)

    async def _attempts(self, ops: list[Op]) -> list[_Outcome]:
        """The batch's outcomes: together first, again after a deadlock or a lost connection.

        When one write fails, the batch runs again with a savepoint per write.
        """
        attempt, isolate = 1, False
        while True:
            try:
                return await self._transaction(ops, isolate=isolate)
            except WriteFailed as failed:
                if len(ops) == 1 or isolate:
                    return [(None, translate_error(self._driver, failed.error)) for _ in ops]
                isolate = True
            except _LostCommit as lost:
                known = self._pipe is not None and self._pipe.usable()
                await self._drop_if_broken()
                return [(None, commit_error(self._driver, lost.error, known)) for _ in ops]
            except Exception as exc:
                broken = await self._drop_if_broken()
                if attempt >= _RETRIES or not (broken or self._driver.retry_batch(exc)):
                    return [(None, translate_error(self._driver, exc)) for _ in ops]
                await asyncio.sleep(0.005 * attempt)
                attempt += 1

    async def _transaction(self, ops: list[Op], *, isolate: bool) -> list[_Outcome]:
        if self._pipe is None:
            self._pipe = await self._connect()
        outbox = _Outbox(self._pipe)
        outbox.execute(self._driver.dialect.begin)
        try:
            if isolate:
                outcomes = [await self._isolated(outbox, op) for op in ops]
                outbox.execute("COMMIT")
            else:
                outcomes = await self._shared(outbox, ops)
        except BaseException:
            await self._roll_back()
            raise
        await self._send_commit(outbox)
        return outcomes

    async def _shared(self, outbox: _Outbox, ops: list[Op]) -> list[_Outcome]:
        """Run `ops` side by side (an `Alone` one by itself); one failure undoes them all."""
        shared = Batch(outbox)
        outcomes: list[_Outcome] = []
        for group in _groups(ops):
            values = await self._side_by_side(outbox, shared, group)
            outcomes.extend((value, None) for value in values)
        shared.flush()
        outbox.execute("COMMIT")
        return outcomes

    async def _side_by_side(self, outbox: _Outbox, shared: Db, ops: Sequence[Op]) -> list[Any]:
        scripts = [_Script(shared, outbox) for _ in ops]
        values: list[Any] = [None] * len(ops)
        running = list(range(len(ops)))
        while running:
            suspended: list[int] = []
            started = time.perf_counter()
            for i in running:
                try:
                    values[i] = self._step(ops[i], scripts[i])
                except _Suspend:
                    suspended.append(i)
                if time.perf_counter() - started > _BUDGET_S:  # let the loop serve the rest
                    await asyncio.sleep(0)
                    started = time.perf_counter()
            running = suspended
            if running:
                await self._round(outbox, [scripts[i] for i in running])
        return values

    def _step(self, op: Op, script: _Script) -> Any:
        script.restart()
        try:
            return op(script)
        except Exception as exc:
            if self._driver.retry_batch(exc) or not script.usable():
                raise
            raise WriteFailed(exc) from exc

    async def _round(self, outbox: _Outbox, waiting: Sequence[_Script]) -> None:
        """Send the outbox; hand each waiting script its rows."""
        assert self._pipe is not None
        try:
            rows = await self._pipe.send(outbox.take())
        except Exception as exc:
            if self._driver.retry_batch(exc) or not self._pipe.usable():
                raise
            raise WriteFailed(exc) from exc
        for script in waiting:
            assert script.waiting is not None
            script.answer(rows[script.waiting])

    async def _isolated(self, outbox: _Outbox, op: Op) -> _Outcome:
        """Run `op` in a savepoint: its failure undoes its writes and no one else's.

        Its statements are sent before its outcome is known, so that a failure is its own.
        """
        start = outbox.position()
        outbox.execute("SAVEPOINT step")
        try:
            (value,) = await self._side_by_side(outbox, outbox, [op])
            outbox.execute("RELEASE SAVEPOINT step")
            await self._round(outbox, ())
        except WriteFailed as failed:
            if outbox.discard_from(start):  # the savepoint reached the server
                outbox.execute("ROLLBACK TO SAVEPOINT step")
                outbox.execute("RELEASE SAVEPOINT step")
            return None, translate_error(self._driver, failed.error)
        return value, None

    async def _send_commit(self, outbox: _Outbox) -> None:
        """Send the rest with COMMIT: a failure now leaves the outcome to be found out."""
        assert self._pipe is not None
        try:
            await self._pipe.send(outbox.take())
        except Exception as exc:
            if self._pipe.usable():  # the server refused a statement: nothing was committed
                await self._roll_back()
                if self._driver.retry_batch(exc):
                    raise
                raise WriteFailed(exc) from exc
            raise _LostCommit(exc) from exc

    async def _roll_back(self) -> None:
        pipe = self._pipe
        if pipe is not None and pipe.usable():
            with contextlib.suppress(Exception):
                await pipe.send([Statement("ROLLBACK", (), False)])

    async def _drop_if_broken(self) -> bool:
        pipe = self._pipe
        if pipe is None or pipe.usable():
            return False
        self._pipe = None
        with contextlib.suppress(Exception):
            await pipe.close()
        return True


def _groups(ops: list[Op]) -> list[Sequence[Op]]:
    """`ops` in runs that may go side by side: each `Alone` op makes a run of its own."""
    groups: list[Sequence[Op]] = []
    start = 0
    for i, op in enumerate(ops):
        if type(op) is Alone:
            if i > start:
                groups.append(ops[start:i])
            groups.append((op,))
            start = i + 1
    if start < len(ops):
        groups.append(ops[start:])
    return groups
