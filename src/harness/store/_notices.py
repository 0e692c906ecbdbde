"""Notices: which kinds of change other processes announced, and coroutines waiting for them.

On PostgreSQL a control or an event commits with a NOTIFY, and a listener thread of each
store posts what arrives here. Waiters count what they saw, so that a notice posted while
they were busy wakes their next wait at once: nothing falls between a read and a wait. On
SQLite nothing is ever posted and every wait lasts its timeout (polling).
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Final

from harness.store._sql import Db, Dialect
from harness.store.protocol import Channel

__all__ = ["CHANNELS", "Channel", "Notices", "notify"]

CHANNELS: Final[dict[Channel, str]] = {
    "controls": "harness_controls",
    "events": "harness_events",
}
"""The database's name of each channel."""


def notify(db: Db, d: Dialect, channel: Channel, run_id: str) -> None:
    """Announce a change of `run_id` on `channel` when the transaction commits (PostgreSQL)."""
    if d.notify is not None:
        db.execute(d.notify, (CHANNELS[channel], run_id))


@dataclass(slots=True, eq=False)
class _Waiter:
    channel: Channel
    future: asyncio.Future[None]
    loop: asyncio.AbstractEventLoop


class Notices:
    """A count of notices per channel, safe to post from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[Channel, int] = {"controls": 0, "events": 0}
        self._waiters: list[_Waiter] = []

    def post(self, channel: Channel) -> None:
        """Count one notice on `channel` and wake everyone waiting for it."""
        with self._lock:
            self._counts[channel] += 1
            woken = [w for w in self._waiters if w.channel == channel]
            self._waiters = [w for w in self._waiters if w.channel != channel]
        for waiter in woken:
            try:
                waiter.loop.call_soon_threadsafe(_wake, waiter.future)
            except RuntimeError:  # that loop is closed: nobody waits any more
                continue

    async def wait(self, channel: Channel, seen: int, timeout_s: float) -> int:
        """Wait until `channel` has more than `seen` notices, or `timeout_s` passed.

        Returns:
            The channel's count now: pass it as `seen` to the next wait.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._counts[channel] > seen:
                return self._counts[channel]
            waiter = _Waiter(channel, loop.create_future(), loop)
            self._waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout_s):
                await waiter.future
        except TimeoutError:
            pass
        finally:
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        with self._lock:
            return self._counts[channel]


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
