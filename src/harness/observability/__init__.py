"""Observability: what runs did and cost, from the event bus and the store.

Subscribers of the event bus keep metrics (`metrics`) and traces (`live`) as runs go;
readers of the store (`cost`, `stats`, `stored`) answer for every past run from any
process. `spans` builds a run's span tree from its events as plain data (for
`harness trace` and the live exporter alike); `context` makes and reads the trace context
stored with each run. Nothing below the runtime imports this package. Third-party
libraries load only when their module is imported: the OpenTelemetry SDK in
`harness.observability.otel` (tracing on, `harness[otel]`), prometheus_client in
`harness.observability.metrics` (metrics on); importing `harness` loads neither.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.observability.config import TraceSettings, capture_content, tracing_enabled
    from harness.observability.context import Sampler, TraceContext, child_span_id
    from harness.observability.live import LiveTraces, SpanExport, StoredRun
    from harness.observability.spans import SpanData, SpanEvent, TraceBuilder, split_model
    from harness.observability.stored import TracedSpan, span_to_dict, trace_of

_HOMES = {
    "harness.observability.config": ("TraceSettings", "capture_content", "tracing_enabled"),
    "harness.observability.context": ("Sampler", "TraceContext", "child_span_id"),
    "harness.observability.live": ("LiveTraces", "SpanExport", "StoredRun"),
    "harness.observability.spans": ("SpanData", "SpanEvent", "TraceBuilder", "split_model"),
    "harness.observability.stored": ("TracedSpan", "span_to_dict", "trace_of"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

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


def __getattr__(name: str) -> Any:
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module 'harness.observability' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
