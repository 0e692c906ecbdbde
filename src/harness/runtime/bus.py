"""The event bus: one place where a run's events fan out to every subscriber.

A subscriber is a callable taking one event. One that also has a `batch` method
(`BatchSubscriber`) is handed the events a run committed together in one call instead:
a durable step publishes its events as one list (`EventBus.publish_batch`), and a
subscriber that takes them at once looks its run up once per step, not once per event.
Either way each subscriber sees every event, in order, with one exception: a subscriber
with an `event_types` attribute (the payload classes it reads) is not called for an event
published alone of any other class (a streamed run's `model_delta`s, a run recorded in
memory). A batch still reaches it whole: one call, which it reads as it likes.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Protocol, cast, runtime_checkable

from harness.core.events import EventPayload, RunEvent, new_event
from harness.core.messages import Message
from harness.core.usage import Usage

__all__ = ["BatchSubscriber", "EventBus", "RunRecorder", "Subscriber", "Subscription"]

Subscriber = Callable[[RunEvent], None]
AsyncSubscriber = Callable[[RunEvent], Awaitable[None] | None]
_Batch = Callable[[Sequence[RunEvent]], None]
_Types = frozenset[type[EventPayload]] | None
_log = logging.getLogger(__name__)
_NO_USAGE = Usage()
"""A run's usage before it reports any (shared: a `Usage` is immutable)."""


@runtime_checkable
class BatchSubscriber(Protocol):
    """A subscriber that can also take the events of one run committed together."""

    def __call__(self, event: RunEvent) -> None:
        """Take one event."""
        ...

    def batch(self, events: Sequence[RunEvent]) -> None:
        """Take `events`: one run's, in order, committed together (never empty)."""
        ...


class EventBus:
    """Delivers every published event to every subscriber, in order.

    A subscriber that raises is logged and skipped; it never breaks a run (a
    `BatchSubscriber` that raises misses the rest of that batch).
    """

    def __init__(self) -> None:
        # Replaced, never changed in place: publishing reads it without a copy, and a
        # subscriber that subscribes or leaves while being called changes the next event.
        self._subscribers: tuple[tuple[Subscriber, _Batch | None, _Types], ...] = ()

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns its removal.

        A `BatchSubscriber` gets batches whole. One with an `event_types` attribute (a
        collection of payload classes) is handed the events published alone of those
        classes only.
        """
        batch = subscriber.batch if isinstance(subscriber, BatchSubscriber) else None
        types = cast(
            "Collection[type[EventPayload]] | None", getattr(subscriber, "event_types", None)
        )
        return self._add(subscriber, batch, None if types is None else frozenset(types))

    def _add(
        self, subscriber: Subscriber, batch: _Batch | None, types: _Types = None
    ) -> Callable[[], None]:
        entry = (subscriber, batch, types)
        self._subscribers = (*self._subscribers, entry)

        def remove() -> None:
            kept = list(self._subscribers)
            kept.remove(entry)
            self._subscribers = tuple(kept)

        return remove

    def attach(self, subscriber: AsyncSubscriber, *, max_queue: int = 100_000) -> Subscription:
        """Add a subscriber that gets events through a queue and a task of its own.

        However slow it is, publishing never waits for it: past `max_queue` waiting events
        the oldest are dropped and counted in `Subscription.dropped` (the store still has
        them all). Call `await subscription.close()` to deliver what is queued and stop.
        Needs a running event loop.
        """
        subscription = Subscription(subscriber, max_queue=max_queue)
        subscription.detach = self._add(subscription.offer, subscription.offer_batch)
        return subscription

    def publish(self, event: RunEvent) -> None:
        """Hand `event` to every subscriber (that reads events of its class)."""
        kind = type(event.payload)
        for subscriber, _, types in self._subscribers:
            if types is not None and kind not in types:
                continue
            try:
                subscriber(event)
            except Exception:
                _log.exception("event subscriber %r failed on %s", subscriber, event.type)

    def publish_batch(self, events: Sequence[RunEvent]) -> None:
        """Hand `events`, one run's committed together, in order, to every subscriber.

        A `BatchSubscriber` takes them in one call; any other, one event at a time.
        """
        if not events:
            return
        for subscriber, batch, _ in self._subscribers:
            if batch is not None:
                try:
                    batch(events)
                except Exception:
                    _log.exception("event subscriber %r failed on a batch", subscriber)
                continue
            for event in events:
                try:
                    subscriber(event)
                except Exception:
                    _log.exception("event subscriber %r failed on %s", subscriber, event.type)


class Subscription:
    """A subscriber fed from a queue by its own task; see `EventBus.attach`."""

    def __init__(self, subscriber: AsyncSubscriber, *, max_queue: int) -> None:
        self._subscriber = subscriber
        self._queue: deque[RunEvent] = deque()
        self._max = max_queue
        self._ready = asyncio.Event()
        self._closing = False
        self._task = asyncio.get_running_loop().create_task(self._deliver())
        self.dropped = 0
        """Events dropped because the subscriber fell more than `max_queue` behind."""
        self.detach: Callable[[], None] = lambda: None

    def offer(self, event: RunEvent) -> None:
        """Queue one event; never blocks."""
        if len(self._queue) >= self._max:
            self._queue.popleft()
            self.dropped += 1
        self._queue.append(event)
        self._ready.set()

    def offer_batch(self, events: Sequence[RunEvent]) -> None:
        """Queue several events; never blocks."""
        queue = self._queue
        queue.extend(events)
        if len(queue) > self._max:
            for _ in range(len(queue) - self._max):
                queue.popleft()
                self.dropped += 1
        self._ready.set()

    async def close(self) -> None:
        """Stop receiving, deliver everything queued, and end the task."""
        if self._closing:
            await self._task
            return
        self.detach()
        self._closing = True
        self._ready.set()
        await self._task

    async def _deliver(self) -> None:
        while True:
            await self._ready.wait()
            self._ready.clear()
            while self._queue:
                event = self._queue.popleft()
                try:
                    result = self._subscriber(event)
                    if inspect.isawaitable(result):
                        await result
                except Exception:
                    _log.exception("event subscriber %r failed on %s", self._subscriber, event.type)
                await asyncio.sleep(0)
            if self._closing:
                return


class RunRecorder:
    """A `RunSink` in memory: numbers events from 1 without gaps and publishes them."""

    def __init__(self, run_id: str, bus: EventBus) -> None:
        self.run_id = run_id
        self.events: list[RunEvent] = []
        self.messages: list[Message] = []
        self.usage = _NO_USAGE
        """What the run consumed so far, as the loop last reported it."""
        self._bus = bus

    def message(self, message: Message) -> None:
        """Keep one message of the run."""
        self.messages.append(message)

    def report_usage(self, total: Usage) -> None:
        """Keep the run's usage so far."""
        self.usage = total

    async def commit(self) -> None:
        """Nothing to commit: everything is kept in memory as it happens."""

    async def checkpoint(self) -> None:
        """Nothing to commit: everything is kept in memory as it happens."""

    async def boundary(self) -> None:
        """A step boundary like any other (see `checkpoint`)."""
        await self.checkpoint()

    async def announce(self) -> None:
        """Nothing to commit: events are published as they happen."""

    def emit(self, payload: EventPayload) -> None:
        """Record one event of the run."""
        events = self.events
        event = new_event(self.run_id, len(events) + 1, time.time(), payload)
        events.append(event)
        self._bus.publish(event)
