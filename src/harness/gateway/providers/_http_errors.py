"""What the HTTP error answers of every provider have in common.

Which statuses may pass, the error class of a status, Retry-After, and messages that mean
the context overflowed. Used by the error modules of each provider, which add what their
API says in its bodies.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from harness.errors import (
    ModelAPIError,
    ModelAuthenticationError,
    ModelBadRequestError,
    ModelNotFoundError,
    ModelOverloadedError,
    ModelRateLimitError,
    ModelServerError,
)

__all__ = [
    "RETRYABLE_STATUSES",
    "error_class",
    "is_context_overflow",
    "parse_retry_after",
    "retryable_status",
]

RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
"""Statuses a later attempt may not meet."""
_OVERFLOW_MARKERS = (
    "context_length_exceeded",
    "exceeds the available context size",
    "context size has been exceeded",
    "maximum context length",
    "prompt is too long",
    "exceeds the context window",
    "exceeds the model's context",
)
_CLASSES: dict[int, type[ModelAPIError]] = {
    400: ModelBadRequestError,
    422: ModelBadRequestError,
    401: ModelAuthenticationError,
    403: ModelAuthenticationError,
    404: ModelNotFoundError,
    429: ModelRateLimitError,
    529: ModelOverloadedError,
}


def error_class(status: int) -> type[ModelAPIError]:
    """The harness error class of an HTTP error status."""
    if status in _CLASSES:
        return _CLASSES[status]
    return ModelServerError if status >= 500 else ModelAPIError


def retryable_status(status: int, headers: Mapping[str, str]) -> bool:
    """Whether `status` may pass on a later attempt (`x-should-retry` has the last word)."""
    should_retry = headers.get("x-should-retry", "").strip().lower()
    if should_retry in ("true", "false"):
        return should_retry == "true"
    return status in RETRYABLE_STATUSES


def is_context_overflow(message: str) -> bool:
    """Whether an error message says the request does not fit the context window."""
    lowered = message.lower()
    return any(marker in lowered for marker in _OVERFLOW_MARKERS)


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `retry-after` (seconds or an HTTP date)."""
    if (millis := _float(headers.get("retry-after-ms"))) is not None:
        return millis / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    if (seconds := _float(value)) is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _float(value: str | None) -> float | None:
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and math.isfinite(seconds) and seconds >= 0 else None
