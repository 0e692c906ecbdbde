"""Trace context of a run: W3C `traceparent` strings, made, read and derived without OpenTelemetry.

A run's trace context is made when it is submitted and stored with it (`runs.trace_parent`):
the trace id (the caller's, when the caller had an active span) and the id of the run span.
Every process that later executes the run parents its spans on it, so a run paused,
resumed or taken over stays one trace. The other spans of a run get ids derived from the
run id and the span's own id, so two processes never disagree on them.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from typing import Final

__all__ = ["TraceContext", "child_span_id"]

_TRACEPARENT: Final = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
_ZERO_TRACE: Final = "0" * 32
_ZERO_SPAN: Final = "0" * 16


@dataclass(frozen=True, kw_only=True, slots=True)
class TraceContext:
    """Where a run's spans belong: its trace, its run span, and that span's parent."""

    trace_id: str
    """32 lower-case hex digits."""
    span_id: str
    """The run span's id: 16 lower-case hex digits."""
    sampled: bool = True
    """Whether the run's spans are exported (the caller's sampling decision)."""
    parent_span_id: str | None = None
    """The caller's span the run span belongs to, when the run joined the caller's trace."""

    @property
    def traceparent(self) -> str:
        """The W3C `traceparent` of the run span."""
        return f"00-{self.trace_id}-{self.span_id}-{'01' if self.sampled else '00'}"

    @classmethod
    def parse(cls, traceparent: str, *, parent_span_id: str | None = None) -> TraceContext:
        """Read a W3C `traceparent` (version 00) of a run span, whose parent is given.

        Raises:
            ValueError: It is not one, or holds an all-zero id.
        """
        found = _TRACEPARENT.fullmatch(traceparent.strip().lower())
        if found is None or found[1] == _ZERO_TRACE or found[2] == _ZERO_SPAN:
            raise ValueError(f"not a W3C traceparent: {traceparent!r}")
        sampled = int(found[3], 16) & 1 == 1
        return cls(
            trace_id=found[1], span_id=found[2], sampled=sampled, parent_span_id=parent_span_id
        )

    @classmethod
    def new(cls, caller: TraceContext | None = None) -> TraceContext:
        """A context for a new run span: under the caller's span, or in a new trace."""
        if caller is None:
            return cls(trace_id=_random_hex(16, _ZERO_TRACE), span_id=_random_hex(8, _ZERO_SPAN))
        return cls(
            trace_id=caller.trace_id,
            span_id=_random_hex(8, _ZERO_SPAN),
            sampled=caller.sampled,
            parent_span_id=caller.span_id,
        )

    @classmethod
    def derived(cls, run_id: str) -> TraceContext:
        """The context of a run stored without one (before traces existed): from its id."""
        digest = hashlib.blake2b(run_id.encode(), digest_size=24).hexdigest()
        return cls(trace_id=digest[:32], span_id=digest[32:])


def child_span_id(run_id: str, span_id: str) -> str:
    """The OpenTelemetry id of span `span_id` (a builder's id) of run `run_id`."""
    return hashlib.blake2b(f"{run_id}/{span_id}".encode(), digest_size=8).hexdigest()


def _random_hex(size: int, zero: str) -> str:
    # random, not os.urandom (a system call each): ids need to be unique, not secret,
    # as the SDK's own RandomIdGenerator has it.
    while (value := format(random.getrandbits(size * 8), f"0{size * 2}x")) == zero:
        pass  # an all-zero id is invalid; one in 2**64 draws
    return value
