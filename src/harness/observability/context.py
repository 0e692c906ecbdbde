"""Trace context of a run: W3C `traceparent` strings, made, read and derived without OpenTelemetry.

A run's trace context is made when it is submitted and stored with it (`runs.trace_parent`):
the trace id (the caller's, when the caller had an active span) and the id of the run span.
Every process that later executes the run parents its spans on it, so a run paused,
resumed or taken over stays one trace. The other spans of a run get ids derived from the
run id and the span's own id, so two processes never disagree on them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from harness.core._frozen import fast_init
from harness.errors import ConfigError

__all__ = ["Sampler", "TraceContext", "child_span_id"]

_TRACEPARENT: Final = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
_ZERO_TRACE: Final = "0" * 32
_ZERO_SPAN: Final = "0" * 16


@fast_init  # one made per run submitted, traced or not
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
            ids = _random_ids()
            return cls(trace_id=ids[:32], span_id=ids[32:])
        return cls(
            trace_id=caller.trace_id,
            span_id=_random_ids()[32:],
            sampled=caller.sampled,
            parent_span_id=caller.span_id,
        )

    @classmethod
    def derived(cls, run_id: str) -> TraceContext:
        """The context of a run stored without one (before traces existed): from its id."""
        digest = hashlib.blake2b(run_id.encode(), digest_size=24).hexdigest()
        return cls(trace_id=digest[:32], span_id=digest[32:])


@dataclass(frozen=True, kw_only=True, slots=True)
class Sampler:
    """Which runs are traced, decided once per run when it is submitted (and stored).

    Read from the standard `OTEL_TRACES_SAMPLER` (`always_on`, `always_off`,
    `traceidratio`, and their `parentbased_` forms, the default being
    `parentbased_always_on`) and `OTEL_TRACES_SAMPLER_ARG` (the ratio).
    """

    ratio: float = 1.0
    """The share of new traces that are sampled: 1.0 all, 0.0 none."""
    parent_based: bool = True
    """A run submitted inside a caller's span follows the caller's decision."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Sampler:
        """The sampler the `OTEL_TRACES_SAMPLER*` variables name.

        Raises:
            ConfigError: A sampler or ratio harness does not know.
        """
        name = environ.get("OTEL_TRACES_SAMPLER", "").strip().lower() or "parentbased_always_on"
        base = name.removeprefix("parentbased_")
        if base not in ("always_on", "always_off", "traceidratio"):
            raise ConfigError(
                f"OTEL_TRACES_SAMPLER={name!r} is not supported: use always_on, always_off, "
                "traceidratio or their parentbased_ forms"
            )
        ratio = {"always_on": 1.0, "always_off": 0.0}.get(base)
        if ratio is None:
            ratio = _ratio(environ.get("OTEL_TRACES_SAMPLER_ARG", "1.0"))
        return cls(ratio=ratio, parent_based=name != base)

    def new_context(self, caller: TraceContext | None) -> TraceContext:
        """The trace context of a new run, with its sampling decision."""
        context = TraceContext.new(caller)
        if caller is None and self.ratio >= 1.0:
            return context  # a new trace is sampled; every id's lower half is below 2**64
        if caller is not None and self.parent_based:
            return context
        # As the SDK's TraceIdRatioBased: the trace id's lower 64 bits against the ratio.
        sampled = int(context.trace_id[16:], 16) < round(self.ratio * 2**64)
        return dataclasses.replace(context, sampled=sampled)


def _ratio(text: str) -> float:
    try:
        ratio = float(text)
    except ValueError:
        ratio = -1.0
    if not 0.0 <= ratio <= 1.0:
        raise ConfigError(f"OTEL_TRACES_SAMPLER_ARG={text!r}: give a ratio from 0 to 1")
    return ratio


def child_span_id(run_id: str, span_id: str) -> str:
    """The OpenTelemetry id of span `span_id` (a builder's id) of run `run_id`."""
    return hashlib.blake2b(f"{run_id}/{span_id}".encode(), digest_size=8).hexdigest()


def _random_ids() -> str:
    """48 random hex digits: a trace id (32), then a span id (16), neither all zeros.

    One draw of `random`, not `os.urandom` (a system call each): ids need to be unique,
    not secret, as the SDK's own RandomIdGenerator has it.
    """
    while True:
        ids = "%048x" % random.getrandbits(192)  # noqa: UP031 (the fastest of the forms)
        if ids[:32] != _ZERO_TRACE and ids[32:] != _ZERO_SPAN:
            return ids  # an all-zero id is invalid; one in 2**64 draws
