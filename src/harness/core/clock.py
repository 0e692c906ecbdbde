"""Time as a dependency, so that tests can control it."""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "SystemClock"]


class Clock(Protocol):
    """A source of wall-clock and monotonic time."""

    def now(self) -> float:
        """Seconds since the epoch (UTC)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards."""
        ...


class SystemClock:
    """The real clock: `now` is `time.time`, `monotonic` is `time.monotonic`.

    They are the functions themselves, not methods that call them: the agent loop reads
    the clock about ten times a run.
    """

    __slots__ = ()

    now = staticmethod(time.time)
    monotonic = staticmethod(time.monotonic)
