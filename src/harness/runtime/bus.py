"""The event bus: one place where a run's events fan out to every subscriber."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable

from harness.core.events import EventPayload, RunEvent
from harness.core.messages import Message
from harness.core.usage import Usage

__all__ = ["EventBus", "RunRecorder", "Subscriber", "Subscription"]

Subscriber = Callable[[RunEvent], None]
AsyncSubscriber = Callable[[RunEvent], Awaitable[None] | None]
_log = logging.getLogger(__name__)


class EventBus:
    """Delivers every published event to every subscriber, in order.

    A subscriber that raises is logged and skipped; it never breaks a run.
    """

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns a function that removes it."""
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber)

    def attach(self, subscriber: AsyncSubscriber, *, max_queue: int = 100_000) -> Subscription:
        """Add a subscriber that gets events through a queue and a task of its own.

        However slow it is, publishing never waits for it: past `max_queue` waiting events
        the oldest are dropped and counted in `Subscription.dropped` (the store still has
        them all). Call `await subscription.close()` to deliver what is queued and stop.
        Needs a running event loop.
        """
        subscription = Subscription(subscriber, max_queue=max_queue)
        self._subscribers.append(subscription.offer)
        subscription.detach = lambda: self._subscribers.remove(subscription.offer)
        return subscription

    def publish(self, event: RunEvent) -> None:
        """Hand `event` to every subscriber."""
        if not self._subscribers:
            return
        for subscriber in tuple(self._subscribers):
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
        self.usage = Usage()
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
        event = RunEvent(run_id=self.run_id, seq=len(events) + 1, ts=time.time(), payload=payload)
        events.append(event)
        self._bus.publish(event)
