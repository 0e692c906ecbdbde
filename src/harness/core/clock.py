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
    """The real clock."""

    def now(self) -> float:
        """Seconds since the epoch (UTC)."""
        return time.time()

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards."""
        return time.monotonic()
