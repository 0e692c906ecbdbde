"""Server-Sent Events: one run's events (stored, then live), and the live events of all runs.

A frame is `id:` (the seq, or `RUN:SEQ` on the all-runs stream), `event:` (the type) and
`data:` (the event's JSON envelope). An idle stream gets a `: keep-alive` comment every
`keepalive_s`. A run's stream ends with `event: end` after its last event. When the server
shuts down, every open stream ends at once (`Streams.close_all`): clients resume with
`Last-Event-ID`, nothing is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import AsyncIterator, Callable, Collection, Generator
from dataclasses import dataclass, field
from typing import Any, Final

from harness.core.codec import dumps, event_to_dict
from harness.core.events import RunEvent
from harness.core.states import TERMINAL_STATES, RunState
from harness.runtime.harness import Harness
from harness.server.problems import Problem
from harness.store.protocol import EventStore, RunRecord

__all__ = [
    "END_FRAME",
    "KEEP_ALIVE",
    "SSE_HEADERS",
    "LiveFeed",
    "RunTail",
    "Streams",
    "frame",
    "run_stream",
]

SSE_HEADERS: Final = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
"""Headers of every event stream: never cached, never buffered by a proxy."""

KEEP_ALIVE: Final = b": keep-alive\n\n"
END_FRAME: Final = b"event: end\ndata: {}\n\n"
_CLOSED: Final = object()
"""Put in a stream's queue when it must end at once (the server is stopping)."""
_END: Final = object()
"""Put in a run's stream after the run's last event."""
_MARGIN_S: Final = 2.0
"""Runs created this long before the last poll are listed again (clocks of writers differ)."""
_LIVE_STATES: Final = tuple(s for s in RunState if s not in TERMINAL_STATES)


def frame(event: RunEvent, *, event_id: str) -> bytes:
    """One SSE frame of `event`."""
    data = dumps(event_to_dict(event))
    return f"id: {event_id}\nevent: {event.type}\ndata: {data}\n\n".encode()


class Streams:
    """The open streams' queues, so that stopping the server ends every one of them.

    It also holds the tail of each run that streams follow (`tail`): one reader of the
    store per run, however many streams the run has; and it admits streams (`admit`) up to
    `max_open` at once, `max_per_name` of one caller.
    """

    def __init__(self, *, max_open: int = 1000, max_per_name: int = 100) -> None:
        self._queues: set[asyncio.Queue[object]] = set()
        self._tails: dict[str, RunTail] = {}
        self.closing = False
        self.max_open, self.max_per_name = max_open, max_per_name
        self._admitted: dict[str, int] = {}
        self._total = 0

    def admit(self, name: str, stream: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """`stream`, counted against the limits until it ends (or is dropped unstarted).

        Raises:
            Problem: 503 when `max_open` streams are open, 429 when `name` holds
                `max_per_name`; both with `Retry-After`.
        """
        retry = {"Retry-After": "5"}
        if self._total >= self.max_open:
            detail = f"{self._total} event streams are open, the most this server keeps"
            raise Problem(503, f"{detail} ([server] max_streams); retry later", retry)
        held = self._admitted.get(name, 0)
        if held >= self.max_per_name:
            detail = f"token {name!r} holds {held} event streams open, the most one may"
            raise Problem(429, f"{detail} ([server] max_streams_per_token); close some", retry)
        self._admitted[name] = held + 1
        self._total += 1
        release = weakref.finalize(stream, self._release, name)  # unstarted, then dropped
        return _counted(stream, release)

    def _release(self, name: str) -> None:
        self._total -= 1
        left = self._admitted[name] - 1
        if left:
            self._admitted[name] = left
        else:
            del self._admitted[name]

    @contextlib.contextmanager
    def open(self, maxsize: int = 0) -> Generator[asyncio.Queue[object]]:
        """A queue for one stream, registered while the stream lives."""
        queue: asyncio.Queue[object] = asyncio.Queue(maxsize)
        if self.closing:
            queue.put_nowait(_CLOSED)
        self._queues.add(queue)
        try:
            yield queue
        finally:
            self._queues.discard(queue)

    @contextlib.contextmanager
    def tail(
        self, store: EventStore, run_id: str, queue: asyncio.Queue[object], after: int
    ) -> Generator[int]:
        """Follow `run_id` into `queue` while in the block; yields where the tail stands.

        The run's tail (started at `after` when the run has none yet) puts each batch of
        new events in `queue`, from the first one it reads after this call on: events up
        to the seq yielded are the caller's to read from the store.
        """
        tail = self._tails.get(run_id)
        if tail is None or tail.ended:
            tail = self._tails[run_id] = RunTail(store, run_id, after, self._forget)
        position = tail.join(queue)
        try:
            yield position
        finally:
            tail.leave(queue)

    def _forget(self, tail: RunTail) -> None:
        if self._tails.get(tail.run_id) is tail:
            del self._tails[tail.run_id]

    def close_all(self) -> None:
        """End every open stream (and any opened from now on)."""
        self.closing = True
        for queue in self._queues:
            _offer(queue, _CLOSED, force=True)

    @property
    def count(self) -> int:
        """How many streams are open."""
        return len(self._queues)

    @property
    def tails(self) -> int:
        """How many runs are followed (one store reader each)."""
        return len(self._tails)


async def _counted(
    stream: AsyncIterator[bytes], release: weakref.finalize[Any, Any]
) -> AsyncIterator[bytes]:
    """`stream`'s chunks; its admission is given back when it ends, however it ends."""
    try:
        async for chunk in stream:
            yield chunk
    finally:
        release()


def _offer(queue: asyncio.Queue[object], item: object, *, force: bool = False) -> bool:
    """Put `item` unless the queue is full; `force` makes room by dropping the oldest."""
    if queue.full():
        if not force:
            return False
        queue.get_nowait()
    queue.put_nowait(item)
    return True


async def _next(queue: asyncio.Queue[object], keepalive_s: float) -> object | None:
    """The next item, or `None` after `keepalive_s` without one."""
    if not queue.empty():
        return queue.get_nowait()
    try:
        async with asyncio.timeout(keepalive_s):  # no task per wait, unlike wait_for
            return await queue.get()
    except TimeoutError:
        return None


@dataclass(frozen=True, kw_only=True, slots=True)
class _Batch:
    """Events a tail read in one go, each framed once for all of the run's streams."""

    frames: tuple[tuple[int, bytes], ...]
    """`(seq, frame)` of each event, in order."""
    data: bytes
    """Every frame, joined."""

    def after(self, seq: int) -> bytes:
        """The frames of the events after `seq`."""
        if seq < self.frames[0][0]:
            return self.data
        return b"".join(data for number, data in self.frames if number > seq)


class RunTail:
    """One run's new events, read from the store once and put in every stream's queue.

    It reads the events after the last it sent, wakes on the store's notices (PostgreSQL)
    or every `poll_s`, and ends with the run: after the run's last event every queue gets
    `_END`. A store error ends every stream (`_CLOSED`): the clients resume. It stops when
    its last stream leaves.
    """

    poll_s: Final = 0.05

    def __init__(
        self, store: EventStore, run_id: str, after: int, forget: Callable[[RunTail], None]
    ) -> None:
        self.run_id, self.position, self.ended = run_id, after, False
        self._store, self._forget = store, forget
        self._queues: set[asyncio.Queue[object]] = set()
        self._task = asyncio.create_task(self._pump())

    def join(self, queue: asyncio.Queue[object]) -> int:
        """Put the run's next batches in `queue`; returns the seq sent up to now."""
        self._queues.add(queue)
        return self.position

    def leave(self, queue: asyncio.Queue[object]) -> None:
        """Stop feeding `queue`; the last one to leave stops the tail."""
        self._queues.discard(queue)
        if not self._queues and not self.ended:
            self._end()
            self._task.cancel()

    def _end(self) -> None:
        self.ended = True
        self._forget(self)

    async def _pump(self) -> None:
        ending: object = _CLOSED  # a store error ends the streams: the clients resume
        try:
            with contextlib.suppress(Exception):
                await self._follow()
                ending = _END
        finally:
            self._end()
            for queue in self._queues:
                _offer(queue, ending, force=ending is _CLOSED)

    async def _follow(self) -> None:
        seen = 0
        while True:
            batch = await self._store.events(self.run_id, after_seq=self.position)
            if batch:
                self._send(batch)
                continue
            record = await self._store.get_run(self.run_id)
            if record is None or (
                record.state in TERMINAL_STATES and record.last_seq <= self.position
            ):
                return
            seen = await self._store.wait_for_notice("events", seen, self.poll_s)

    def _send(self, events: list[RunEvent]) -> None:
        frames = tuple((e.seq, frame(e, event_id=str(e.seq))) for e in events)
        item = _Batch(frames=frames, data=b"".join(data for _, data in frames))
        self.position = events[-1].seq
        for queue in self._queues:
            queue.put_nowait(item)


async def run_stream(
    harness: Harness, run_id: str, after: int, *, streams: Streams, keepalive_s: float
) -> AsyncIterator[bytes]:
    """One run's events after seq `after`, stored first, then live, then `event: end`.

    Every stream of a run shares the run's tail (`Streams.tail`); a stream reads from the
    store itself only the events its tail had sent before it joined.
    """
    with (
        streams.open() as queue,
        streams.tail(harness.store, run_id, queue, after) as position,
    ):
        sent = after
        if after < position:
            stored = await harness.store.events(run_id, after_seq=after)
            if stored:
                yield b"".join(frame(e, event_id=str(e.seq)) for e in stored)
                sent = stored[-1].seq
        while True:
            item = await _next(queue, keepalive_s)
            if item is None:
                yield KEEP_ALIVE
                continue
            chunk, sent, done = _unsent([item, *_drain(queue)], sent)
            if chunk:
                yield chunk
            if done:
                return


def _drain(queue: asyncio.Queue[object]) -> list[object]:
    """Every item the queue holds now."""
    return [queue.get_nowait() for _ in range(queue.qsize())]


def _unsent(items: list[object], sent: int) -> tuple[bytes, int, bool]:
    """The frames of `items` after seq `sent`, the last seq in them, and whether it ends.

    A stream ends after `_END` (with `event: end`) or `_CLOSED` (the server is stopping:
    the client resumes later).
    """
    parts: list[bytes] = []
    for item in items:
        if isinstance(item, _Batch):
            parts.append(item.after(sent))
            sent = max(sent, item.frames[-1][0])
        else:
            if item is _END:
                parts.append(END_FRAME)
            return b"".join(parts), sent, True
    return b"".join(parts), sent, False


@dataclass(eq=False)
class _Subscriber:
    queue: asyncio.Queue[object]
    types: frozenset[str] | None


@dataclass
class _Followed:
    """Where the feed is in each run it follows."""

    seqs: dict[str, int] = field(default_factory=lambda: {})
    live: set[str] = field(default_factory=lambda: set())
    since: float = 0.0


class LiveFeed:
    """The live events of every run, read from the store once for all subscribers.

    Each poll reads the runs not yet ended (the `state` index) and the runs created since
    the last poll (the `created_at` index), and the new events of those whose `last_seq`
    moved; so runs executed by any process on the store are seen. PostgreSQL's notices
    wake it at once; otherwise it polls every `poll_s`.

    Args:
        store: The store to follow (called when the first subscriber comes: the store may
            open after the feed is made).
        poll_s: Seconds between polls when no notice comes.
        queue_size: Events held for a slow subscriber before its stream is ended.
    """

    def __init__(
        self,
        store: Callable[[], EventStore],
        *,
        poll_s: float = 0.25,
        queue_size: int = 10_000,
    ) -> None:
        self._store_of, self._poll_s, self._queue_size = store, poll_s, queue_size
        self._subscribers: set[_Subscriber] = set()
        self._task: asyncio.Task[None] | None = None

    async def stream(
        self, streams: Streams, *, types: Collection[str] | None, keepalive_s: float
    ) -> AsyncIterator[bytes]:
        """Frames of every run's new events (of `types` only, when given), until closed."""
        with streams.open(self._queue_size) as queue:
            subscriber = _Subscriber(queue, frozenset(types) if types else None)
            self._subscribers.add(subscriber)
            self._ensure_running()
            try:
                while True:
                    item = await _next(queue, keepalive_s)
                    if item is None:
                        yield KEEP_ALIVE
                    elif isinstance(item, RunEvent):
                        yield frame(item, event_id=f"{item.run_id}:{item.seq}")
                    else:
                        return
            finally:
                self._subscribers.discard(subscriber)

    def _ensure_running(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._follow())

    async def aclose(self) -> None:
        """Stop following the store."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    @property
    def _store(self) -> EventStore:
        return self._store_of()

    async def _follow(self) -> None:
        followed = await self._start()
        seen = 0
        while self._subscribers:
            seen = await self._store.wait_for_notice("events", seen, self._poll_s)
            with contextlib.suppress(Exception):  # a store hiccup: the next poll tries again
                await self._poll(followed)

    async def _start(self) -> _Followed:
        """Where every run stands now: only what happens from here on is sent."""
        followed = _Followed(since=time.time())
        for record in await self._store.list_runs(state=_LIVE_STATES, limit=None):
            followed.seqs[record.run_id] = record.last_seq
            followed.live.add(record.run_id)
        return followed

    async def _poll(self, followed: _Followed) -> None:
        started = time.time()
        records = {r.run_id: r for r in await self._store.list_runs(state=_LIVE_STATES, limit=None)}
        for record in await self._store.list_runs(since=followed.since - _MARGIN_S, limit=None):
            records.setdefault(record.run_id, record)
        for run_id in followed.live - records.keys():
            ended = await self._store.get_run(run_id)
            if ended is not None:
                records[run_id] = ended
        for record in records.values():
            await self._catch_up(record, followed)
        followed.since = started

    async def _catch_up(self, record: RunRecord, followed: _Followed) -> None:
        """Send the events of `record` the feed has not sent yet."""
        known = followed.seqs.get(record.run_id, 0)
        if record.last_seq > known:
            for event in await self._store.events(record.run_id, after_seq=known):
                self._send(event)
                known = event.seq
        followed.seqs[record.run_id] = known
        if record.state in TERMINAL_STATES:
            followed.live.discard(record.run_id)
            if record.created_at < followed.since - _MARGIN_S:  # no poll lists it again
                del followed.seqs[record.run_id]
        else:
            followed.live.add(record.run_id)

    def _send(self, event: RunEvent) -> None:
        for subscriber in list(self._subscribers):
            if subscriber.types is not None and event.type not in subscriber.types:
                continue
            if not _offer(subscriber.queue, event):
                # too slow: end its stream, it reconnects
                _offer(subscriber.queue, _CLOSED, force=True)
                self._subscribers.discard(subscriber)
