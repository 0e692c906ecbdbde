"""The time window of a report over past runs: `--since 30m|12h|7d|2026-11-30`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from harness.errors import ConfigError

__all__ = ["Since", "parse_since"]

_SECONDS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_SPAN: Final = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")


@dataclass(frozen=True, kw_only=True, slots=True)
class Since:
    """Where a window of past runs starts."""

    start: float
    """Seconds since the epoch: runs created at or after this are in the window."""
    text: str
    """The window in words, e.g. `in the last 7d` or `since 2026-11-30`."""


def parse_since(value: str, *, now: float) -> Since:
    """The window `value` names: a span back from `now` (`30m`, `12h`, `7d`, `2w`) or an ISO date.

    A date or time without a zone is UTC.

    Raises:
        ConfigError: `value` is neither, or a span of zero; the message says what is accepted.
    """
    text = value.strip()
    span = _SPAN.fullmatch(text)
    if span is not None:
        seconds = float(span[1]) * _SECONDS[span[2]]
        if seconds <= 0:
            raise ConfigError(f"--since: {value!r} is an empty window; use e.g. 30m, 12h or 7d")
        return Since(start=now - seconds, text=f"in the last {text}")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(
            f"--since: {value!r} is neither a span (30m, 12h, 7d, 2w) "
            "nor an ISO date or time (2026-11-30, 2026-11-30T08:00)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return Since(start=moment.timestamp(), text=f"since {text}")
