"""Observability: traces of runs (OpenTelemetry GenAI conventions), built from run events.

Nothing here imports OpenTelemetry: `spans` builds a run's span tree from its events as
plain data (for `harness trace` and the live exporter alike), `context` makes and reads
the trace context stored with each run, `live` follows the event bus. The SDK lives in
`harness.observability.otel` alone, imported only when tracing is on (`harness[otel]`).
"""

from __future__ import annotations

from harness.observability.config import TraceSettings, capture_content, tracing_enabled
from harness.observability.context import Sampler, TraceContext, child_span_id
from harness.observability.live import LiveTraces, SpanExport, StoredRun
from harness.observability.spans import SpanData, SpanEvent, TraceBuilder, split_model
from harness.observability.stored import TracedSpan, span_to_dict, trace_of

__all__ = [
    "LiveTraces",
    "Sampler",
    "SpanData",
    "SpanEvent",
    "SpanExport",
    "StoredRun",
    "TraceBuilder",
    "TraceContext",
    "TraceSettings",
    "TracedSpan",
    "capture_content",
    "child_span_id",
    "span_to_dict",
    "split_model",
    "trace_of",
    "tracing_enabled",
]
