"""`SqlStore`: the `EventStore` over any database with a `Driver` (SQLite, PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from harness.core.clock import Clock, SystemClock
from harness.core.events import EventType, RunEvent
from harness.core.messages import Message
from harness.errors import ConfigError
from harness.store import (
    _decisions,
    _experiments,
    _feed,
    _inbox,
    _leases,
    _reads,
    _schema,
    _writes,
)
from harness.store._async_writer import Alone
from harness.store._engine import Committer, Readers, Writer, closed_error
from harness.store._notices import CHANNELS, Notices
from harness.store._sql import Db, Driver, Listening
from harness.store.protocol import (
    CLAIMABLE_STATES,
    Channel,
    Control,
    ControlKind,
    Decision,
    ExperimentStop,
    FeedPage,
    FeedPosition,
    InboxMessage,
    MessageTokens,
    NewEvent,
    NewMail,
    NewRun,
    RunRecord,
    RunUpdate,
    StepWrite,
)

__all__ = ["SqlStore"]

T = TypeVar("T")


class SqlStore:
    """An `EventStore` whose writes go through one group-committing writer.

    Args:
        driver: The database.
        clock: Time for timestamps and leases.
        max_batch: Writes per transaction at most; 1 turns group commit off.
        readers: Reader threads (and connections) at most.
    """

    def __init__(
        self,
        driver: Driver,
        *,
        clock: Clock | None = None,
        max_batch: int = 256,
        readers: int = 2,
    ) -> None:
        self._driver = driver
        self._dialect = driver.dialect
        """The driver's dialect, read once: each write names it."""
        self._clock: Clock = clock or SystemClock()
        self._max_batch = max_batch
        self._reader_count = readers
        self._writer: Committer | None = None
        self._readers: Readers | None = None
        self._notices = Notices()
        self._listening: Listening | None = None

    async def open(self) -> None:
        """Connect and bring the schema up to date; a no-op when already open.

        Raises:
            StoreError: The database cannot be reached or is newer than this harness.
        """
        if self._writer is not None:
            return
        now = self._clock.now()
        try:
            self._writer = await self._start_writer()
            self._readers = Readers(self._driver, size=self._reader_count)
            await self._write(lambda db: _schema.migrate(db, self._dialect, now))
            self._listening = await asyncio.to_thread(
                self._driver.listen, self._post, list(CHANNELS.values())
            )
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Commit pending writes and close every connection; safe to call twice."""
        writer, readers, listening = self._writer, self._readers, self._listening
        self._writer = self._readers = self._listening = None
        if listening is not None:
            await asyncio.to_thread(listening.stop)
        if writer is not None:
            await writer.stop()
        if readers is not None:
            await readers.stop()

    async def __aenter__(self) -> SqlStore:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def create_run(
        self, run: NewRun, *, events: Sequence[NewEvent] = (), messages: Sequence[Message] = ()
    ) -> list[RunEvent]:
        """Create a run with its first events and messages; see `EventStore.create_run`."""
        d, now = self._dialect, self._clock.now()
        events, messages = tuple(events), tuple(messages)
        encoded = _writes.encode_step(run.run_id, events, messages, now)
        return await self._write(
            lambda db: _writes.create_run(db, d, run, events, messages, now, encoded)
        )

    async def append(self, step: StepWrite) -> list[RunEvent]:
        """Commit one step; see `EventStore.append`."""
        d, now, step = self._dialect, self._clock.now(), _writes.snapshot(step)
        encoded = _writes.encode_step(step.run_id, step.events, step.messages, now)
        if step.key is not None:  # it reads the keys written so far: no other write in between
            return await self._write(Alone(lambda db: _writes.append(db, d, step, now, encoded)))
        return await self._write(lambda db: _writes.append(db, d, step, now, encoded))

    async def transition(
        self,
        run_id: str,
        from_states: Collection[str],
        to_state: str,
        *,
        events: Sequence[NewEvent] = (),
        update: RunUpdate | None = None,
    ) -> list[RunEvent] | None:
        """Compare and set the run's state; see `EventStore.transition`."""
        step = StepWrite(run_id=run_id, events=tuple(events), update=update)
        step = _writes.with_state(step, to_state)
        now, states = self._clock.now(), frozenset(map(str, from_states))
        d, encoded = self._dialect, _writes.encode_step(run_id, step.events, (), now)
        return await self._write(
            lambda db: _writes.transition(db, d, run_id, states, step, now, encoded)
        )

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or `None`."""
        return await self._read(lambda db: _reads.get_run(db, run_id))

    async def list_runs(
        self,
        *,
        state: str | Collection[str] | None = None,
        agent: str | None = None,
        owner: str | None = None,
        since: float | None = None,
        until: float | None = None,
        task_type: str | None = None,
        limit: int | None = 100,
        experiment: str | None = None,
        before: tuple[float, str] | None = None,
        parent_run_id: str | None = None,
        root_run_id: str | None = None,
    ) -> list[RunRecord]:
        """Runs matching every filter, newest first; see `EventStore.list_runs`."""
        states = _strings((state,) if isinstance(state, str) else state)
        where = _reads.RunFilter(
            states=states,
            agent=agent,
            owner=owner,
            since=since,
            until=until,
            task_type=task_type,
            experiment=experiment,
            before=before,
            parent_run_id=parent_run_id,
            root_run_id=root_run_id,
        )
        return await self._read(lambda db: _reads.list_runs(db, where, limit=limit))

    async def count_runs(self, state: str | Collection[str]) -> int:
        """How many runs are in `state` (or one of several); see `EventStore.count_runs`."""
        states = _strings((state,) if isinstance(state, str) else state) or ()
        return await self._read(lambda db: _reads.count_runs(db, states))

    async def events(
        self, run_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> list[RunEvent]:
        """The run's events after `after_seq`, in order."""
        return await self._read(
            lambda db: _reads.events(db, run_id, after_seq=after_seq, limit=limit)
        )

    async def events_of_runs(
        self, run_ids: Collection[str], *, types: Collection[EventType] | None = None
    ) -> list[RunEvent]:
        """Events of several runs in batched queries; see `EventStore.events_of_runs`."""
        ids, kinds = tuple(dict.fromkeys(run_ids)), None if types is None else tuple(types)
        return await self._read(lambda db: _reads.events_of_runs(db, ids, kinds))

    async def count_events(
        self, run_ids: Collection[str], *, types: Collection[EventType]
    ) -> dict[str, int]:
        """Events of `types` per run, counted in batched queries; see `EventStore`."""
        ids, kinds = tuple(dict.fromkeys(run_ids)), tuple(str(t) for t in types)
        return await self._read(lambda db: _reads.count_events(db, ids, kinds))

    async def messages(self, run_id: str) -> list[Message]:
        """The run's messages, in order."""
        return await self._read(lambda db: _reads.messages(db, run_id))

    async def messages_of_runs(self, run_ids: Collection[str]) -> dict[str, list[Message]]:
        """The messages of several runs in batched queries; see `EventStore.messages_of_runs`."""
        ids = tuple(dict.fromkeys(run_ids))
        return await self._read(lambda db: _reads.messages_of_runs(db, ids))

    async def message_tokens(
        self, run_ids: Collection[str], *, roles: Collection[str] | None = None
    ) -> list[MessageTokens]:
        """Sizes of the messages of several runs; see `EventStore.message_tokens`."""
        ids, wanted = tuple(run_ids), None if roles is None else tuple(roles)
        return await self._read(lambda db: _reads.message_tokens(db, ids, wanted))

    async def put_blob(self, run_id: str, key: str, text: str) -> None:
        """Keep `text` under `key`, replacing any text kept there before."""
        await self.append(StepWrite(run_id=run_id, blobs={key: text}))

    async def get_blob(self, run_id: str, key: str) -> str | None:
        """The text kept under `key`, or `None`."""
        return await self._read(lambda db: _reads.get_blob(db, run_id, key))

    async def record_audit(self, run_id: str, record: Mapping[str, Any]) -> None:
        """Keep one audit record of the run."""
        now, record = self._clock.now(), dict(record)
        await self._write(lambda db: _writes.record_audit(db, run_id, record, now))

    async def audit(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """Audit records of one run or of all, in the order they were kept."""
        return await self._read(lambda db: _reads.audit(db, run_id))

    async def claim(
        self,
        owner: str,
        *,
        lease_s: float,
        run_ids: Collection[str] | None = None,
        states: Collection[str] = CLAIMABLE_STATES,
        limit: int = 100,
    ) -> list[RunRecord]:
        """Lease free or expired runs to `owner`; see `EventStore.claim`."""
        d, now = self._dialect, self._clock.now()
        ids = None if run_ids is None else tuple(run_ids)
        wanted = tuple(str(s) for s in states)
        return await self._write(
            Alone(  # it reads the rows to take, then takes them: no other write in between
                lambda db: _leases.claim(
                    db, d, owner, lease_s=lease_s, run_ids=ids, states=wanted, limit=limit, now=now
                )
            )
        )

    async def start_runs(self, owner: str, run_ids: Collection[str]) -> list[str]:
        """Move `owner`'s PENDING runs among `run_ids` to RUNNING; see `EventStore`."""
        now, ids = self._clock.now(), tuple(run_ids)
        return await self._write(lambda db: _leases.start(db, owner, ids, now))

    async def renew(self, owner: str, run_ids: Collection[str], *, lease_s: float) -> list[str]:
        """Extend `owner`'s leases; returns the ids it still holds."""
        now, ids = self._clock.now(), tuple(run_ids)
        return await self._write(lambda db: _leases.renew(db, owner, ids, lease_s=lease_s, now=now))

    async def release(self, owner: str, run_ids: Collection[str] | None = None) -> None:
        """Give up `owner`'s leases on `run_ids`, or on all its runs."""
        ids = None if run_ids is None else tuple(run_ids)
        await self._write(lambda db: _leases.release(db, owner, ids))

    async def expired_runs(self) -> list[RunRecord]:
        """Unfinished runs whose lease ran out."""
        now = self._clock.now()
        return await self._read(lambda db: _reads.expired_runs(db, now))

    async def lease_expires_in(self, owner: str) -> float | None:
        """Seconds until another owner's next lease runs out; see `EventStore`."""
        now = self._clock.now()
        return await self._read(lambda db: _reads.lease_expires_in(db, owner, now))

    async def send_control(
        self, run_id: str, kind: ControlKind, payload: Mapping[str, Any] | None = None
    ) -> int:
        """Queue a request for the run's owner; returns its id."""
        d, now, body = self._dialect, self._clock.now(), dict(payload or {})
        return await self._write(lambda db: _leases.send_control(db, d, run_id, kind, body, now))

    async def take_controls(
        self, *, run_id: str | None = None, owner: str | None = None, engine: str | None = None
    ) -> list[Control]:
        """Consume the pending controls of a run, an owner's or an engine's runs, in order."""
        if sum(scope is not None for scope in (run_id, owner, engine)) != 1:
            raise ConfigError("take_controls needs exactly one of run_id, owner and engine")
        now = self._clock.now()
        return await self._write(
            lambda db: _leases.take_controls(db, run_id=run_id, owner=owner, engine=engine, now=now)
        )

    async def decide(self, decision: Decision) -> Decision | None:
        """Record a decision unless the call has one; see `EventStore.decide`."""
        d, now = self._dialect, self._clock.now()
        return await self._write(lambda db: _decisions.decide(db, d, decision, now))

    async def decisions(self, run_id: str) -> list[Decision]:
        """The run's recorded decisions, oldest first."""
        return await self._read(lambda db: _decisions.decisions(db, run_id))

    async def post_message(self, mail: NewMail) -> int:
        """Put a message in a run's inbox and tell its owner; see `EventStore.post_message`."""
        d, now = self._dialect, self._clock.now()
        # It reads the key and the run's state, then writes: no other write in between.
        return await self._write(Alone(lambda db: _inbox.post(db, d, mail, now)))

    async def inbox(self, run_id: str, *, unread: bool = True) -> list[InboxMessage]:
        """The run's messages not delivered yet (or all), oldest first."""
        return await self._read(lambda db: _inbox.inbox(db, run_id, unread=unread))

    async def runs_with_mail(self, run_ids: Collection[str]) -> set[str]:
        """Which of the runs have a message not delivered yet; see `EventStore`."""
        ids = tuple(run_ids)
        return await self._read(lambda db: _inbox.with_mail(db, ids)) if ids else set()

    async def stop_experiment(self, stop: ExperimentStop) -> None:
        """Send all of an experiment's traffic to one variant; see `EventStore`."""
        now = self._clock.now()
        await self._write(lambda db: _experiments.stop(db, stop, now))

    async def experiment_stops(self) -> dict[str, ExperimentStop]:
        """The experiments stopped so far, by name."""
        return await self._read(_experiments.stops)

    async def wait_for_notice(self, channel: Channel, seen: int, timeout_s: float) -> int:
        """Wait for news on `channel` or for `timeout_s`; see `EventStore.wait_for_notice`."""
        return await self._notices.wait(channel, seen, timeout_s)

    def _post(self, name: str) -> None:
        for channel, db_name in CHANNELS.items():
            if db_name == name:
                self._notices.post(channel)

    async def feed_end(self) -> FeedPosition:
        """The position after every event committed so far."""
        d = self._dialect
        return await self._read(lambda db: _feed.end(db, d))

    async def read_feed(
        self, after: FeedPosition, *, types: Collection[EventType], limit: int = 500
    ) -> FeedPage:
        """Events of `types` after `after`, in commit order; see `EventStore.read_feed`."""
        d, kinds = self._dialect, tuple(sorted(str(t) for t in types))
        return await self._read(lambda db: _feed.read(db, d, after, kinds, limit))

    async def feed_cursors(self, names: Collection[str] | None = None) -> dict[str, FeedPosition]:
        """The stored positions of the named readers of the feed, or of every reader."""
        wanted = None if names is None else tuple(dict.fromkeys(names))
        return await self._read(lambda db: _feed.cursors(db, wanted))

    async def start_feed_cursors(
        self, positions: Mapping[str, FeedPosition]
    ) -> dict[str, FeedPosition]:
        """Store the cursors not stored yet; see `EventStore.start_feed_cursors`."""
        now, given = self._clock.now(), dict(positions)
        await self._write(lambda db: _feed.start_cursors(db, given, now))
        return await self.feed_cursors(given)

    async def move_feed_cursors(self, positions: Mapping[str, FeedPosition]) -> None:
        """Move cursors forward only; see `EventStore.move_feed_cursors`."""
        now, given = self._clock.now(), dict(positions)
        await self._write(lambda db: _feed.move_cursors(db, given, now))

    async def schema_version(self) -> int:
        """The last migration applied to the database."""
        return await self._read(_reads.schema_version)

    async def _start_writer(self) -> Committer:
        """The writes' way to the database: a thread that commits them in groups.

        SQLite and PostgreSQL replace it with writers on the event loop.
        """
        return Writer(self._driver, max_batch=self._max_batch)

    async def _write(self, op: Callable[[Db], T]) -> T:
        if self._writer is None:
            raise closed_error()
        return await self._writer.submit(op)

    async def _read(self, read: Callable[[Db], T]) -> T:
        if self._readers is None:
            raise closed_error()
        return await self._readers.run(read)


def _strings(values: Collection[str] | None) -> tuple[str, ...] | None:
    """Plain strings, so that `StrEnum` members reach the driver as text."""
    return None if values is None else tuple(str(value) for value in values)
