"""The event bus: one place where a run's events fan out to every subscriber."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from harness.core.events import EventType, RunEvent
from harness.core.messages import Message

__all__ = ["EventBus", "RunRecorder", "Subscriber"]

Subscriber = Callable[[RunEvent], None]
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

    def publish(self, event: RunEvent) -> None:
        """Hand `event` to every subscriber."""
        for subscriber in tuple(self._subscribers):
            try:
                subscriber(event)
            except Exception:
                _log.exception("event subscriber %r failed on %s", subscriber, event.type)


class RunRecorder:
    """A `RunSink` in memory: numbers events from 1 without gaps and publishes them."""

    def __init__(self, run_id: str, bus: EventBus) -> None:
        self.run_id = run_id
        self.events: list[RunEvent] = []
        self.messages: list[Message] = []
        self._bus = bus

    def message(self, message: Message) -> None:
        """Keep one message of the run."""
        self.messages.append(message)

    async def checkpoint(self) -> None:
        """Nothing to commit: everything is kept in memory as it happens."""

    def emit(self, type: EventType, payload: Mapping[str, Any]) -> None:
        """Record one event of the run."""
        event = RunEvent(
            run_id=self.run_id, seq=len(self.events) + 1, ts=time.time(), type=type, payload=payload
        )
        self.events.append(event)
        self._bus.publish(event)
