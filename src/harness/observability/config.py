"""Whether to trace, and what: the `[observability]` table and the `OTEL_*` variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = ["TraceSettings", "capture_content", "tracing_enabled"]

_TRUE = ("true", "1", "yes", "on")


@dataclass(frozen=True, kw_only=True, slots=True)
class TraceSettings:
    """The `[observability]` table of `harness.toml`."""

    traces: Literal["otlp", "console", "none"] | None = None
    """Export traces: `otlp` (to the `OTEL_EXPORTER_OTLP_*` endpoint), `console`, or
    `none`; unset, traces are exported when `OTEL_TRACES_EXPORTER` names an exporter."""
    export: Literal["process", "thread"] = "process"
    """Where OTLP spans are encoded and sent: a child process (the default: the harness
    only writes plain data to a pipe) or a thread of the harness process."""
    capture_content: bool | None = None
    """Put message content in spans (task, replies, tool arguments and results); unset,
    `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` turns it on."""


def tracing_enabled(settings: TraceSettings, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether runs are traced: configured so, and not `OTEL_SDK_DISABLED=true`."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if settings.traces is not None:
        return settings.traces != "none"
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    return exporter not in ("", "none")


def capture_content(settings: TraceSettings, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether spans carry message content (off unless opted in)."""
    if settings.capture_content is not None:
        return settings.capture_content
    flag = environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "")
    return flag.strip().lower() in _TRUE
