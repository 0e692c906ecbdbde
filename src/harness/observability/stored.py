"""A stored run's trace: its events fed to the builder, laid out as a tree (`harness trace`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.core.events import RunEvent
from harness.observability.context import TraceContext, child_span_id
from harness.observability.spans import SpanData, TraceBuilder

__all__ = ["TracedSpan", "span_to_dict", "trace_of"]


@dataclass(frozen=True, kw_only=True, slots=True)
class TracedSpan:
    """A span of a stored run, where it sits in the tree."""

    span: SpanData
    """The span."""
    depth: int
    """0 for the run span, 1 for its children …"""
    trace_id: str
    """The OpenTelemetry trace id (hex) the live export uses."""
    otel_span_id: str
    """The OpenTelemetry span id (hex) the live export uses."""


def trace_of(
    run_id: str,
    events: Iterable[RunEvent],
    context: TraceContext,
    *,
    providers: Mapping[str, str] | None = None,
) -> list[TracedSpan]:
    """Every span of a stored run, parents before children, siblings by start time.

    Spans still open (a run not ended) are cut at its last event and marked unfinished.
    """
    builder = TraceBuilder(run_id, providers=providers)
    spans: list[SpanData] = []
    for event in events:
        spans += builder.feed(event)
    spans += builder.close()
    children: dict[str | None, list[SpanData]] = {}
    for span in spans:
        children.setdefault(span.parent_id, []).append(span)
    laid: list[TracedSpan] = []

    def visit(parent: str | None, depth: int) -> None:
        for span in sorted(children.get(parent, ()), key=lambda s: (s.start, s.end)):
            otel = (
                context.span_id if span.parent_id is None else child_span_id(run_id, span.span_id)
            )
            laid.append(
                TracedSpan(span=span, depth=depth, trace_id=context.trace_id, otel_span_id=otel)
            )
            visit(span.span_id, depth + 1)

    visit(None, 0)
    return laid


def span_to_dict(traced: TracedSpan) -> dict[str, Any]:
    """A span as JSON-compatible data (`harness trace --json`)."""
    span = traced.span
    return {
        "trace_id": traced.trace_id,
        "span_id": traced.otel_span_id,
        "name": span.name,
        "depth": traced.depth,
        "kind": span.kind,
        "start": span.start,
        "end": span.end,
        "duration_s": round(span.end - span.start, 6),
        "status": span.status,
        "status_message": span.status_message,
        "finished": span.finished,
        "attributes": {
            k: list(v) if isinstance(v, tuple) else v for k, v in span.attributes.items()
        },
        "events": [
            {"name": e.name, "ts": e.ts, "attributes": dict(e.attributes)} for e in span.events
        ],
    }
