"""The one home of the OpenTelemetry SDK: finished spans to `ReadableSpan`s, exported in batches.

Imported only when tracing is on (`pip install 'harness[otel]'`). Spans are not made with
a tracer: a run's spans are built from its stored events, may be finished by another
process than the one that started them, and must carry ids fixed in advance (the run
span's is stored with the run; the others derive from the run id). So each finished
`SpanData` becomes a `ReadableSpan` with its own ids and times, handed straight to a
`BatchSpanProcessor` — which exports from its own thread, off the event loop.

The exporter follows the standard variables: `OTEL_TRACES_EXPORTER` (`otlp`, `console`,
`none`), `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` / `OTEL_EXPORTER_OTLP_PROTOCOL`
(`http/protobuf`, the default, or `grpc`), the endpoints, headers and timeouts the OTLP
exporters read themselves (`OTEL_EXPORTER_OTLP_ENDPOINT`, `…_TRACES_ENDPOINT` …),
`OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES`, and `OTEL_BSP_*` for batching.

`OtelExport` does this in the harness process. For OTLP the harness exports from a child
process instead (`harness.observability.export_process`): the SDK's span objects and its
protobuf encoder cost more than the run they describe, and would hold the GIL the event
loop needs. There the spans skip the SDK's objects altogether: `harness.observability._otlp`
writes the request's protobuf from the spans' records, and `RequestExport` sends it through
the SDK's own OTLP exporter (endpoint, headers, TLS, compression, timeouts and retries as the
variables say).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Final

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from harness.errors import ConfigError
from harness.observability.context import TraceContext, child_span_id
from harness.observability.live import SpanExport
from harness.observability.spans import SpanData, SpanRecord

__all__ = [
    "OtelExport",
    "RequestExport",
    "SpanSink",
    "batch_sink",
    "current_context",
    "exporter_from_env",
    "exporter_name",
    "request_export",
]

_NS: Final = 1_000_000_000
_KINDS: Final = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}
_SAMPLED: Final = TraceFlags(TraceFlags.SAMPLED)
_UNSET: Final = Status(StatusCode.UNSET)
_STATUS: Final = {"unset": StatusCode.UNSET, "ok": StatusCode.OK, "error": StatusCode.ERROR}


def exporter_name(kind: str | None = None) -> str:
    """`none`, `console`, `otlp grpc` or `otlp http/protobuf`: what `exporter_from_env` makes.

    Raises:
        ConfigError: An exporter or protocol this build does not know.
    """
    name = (kind or os.environ.get("OTEL_TRACES_EXPORTER") or "otlp").split(",")[0].strip()
    if name in ("none", "console"):
        return name
    if name != "otlp":
        raise ConfigError(
            f"OTEL_TRACES_EXPORTER={name!r} is not supported: use otlp, console or none"
        )
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    )
    if protocol not in ("grpc", "http/protobuf"):
        raise ConfigError(
            f"OTLP protocol {protocol!r} is not supported: use http/protobuf or grpc "
            "(OTEL_EXPORTER_OTLP_PROTOCOL)"
        )
    return f"otlp {protocol}"


def exporter_from_env(kind: str | None = None) -> SpanExporter | None:
    """The exporter `OTEL_TRACES_EXPORTER` (or `kind`) names; `None` for `none`.

    Raises:
        ConfigError: An exporter or protocol this build does not know.
    """
    name = exporter_name(kind)
    if name == "none":
        return None
    if name == "console":
        return ConsoleSpanExporter()
    if name == "otlp grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HTTPSpanExporter,
    )

    return HTTPSpanExporter()


class SpanSink:
    """Finished `SpanData` as `ReadableSpan`s with their stored ids, into a span processor.

    Args:
        processor: The processor to feed (it exports); `None` drops every span.
    """

    def __init__(self, processor: SpanProcessor | None) -> None:
        self.processor = processor
        named = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "harness"}
        self._resource = _HashedResource(Resource.create(named))
        self._scope = InstrumentationScope("harness", _version())

    def add(self, context: TraceContext, run_id: str, spans: Sequence[SpanData]) -> None:
        """Hand each span to the processor, with its OpenTelemetry ids."""
        self.add_records(
            context,
            run_id,
            [
                (span.span_id, span.parent_id, span.name, span.kind, span.start, span.end,
                 span.attributes, [(e.name, e.ts, e.attributes) for e in span.events],
                 span.status, span.status_message)
                for span in spans
            ],
        )  # fmt: skip

    def add_records(
        self, context: TraceContext, run_id: str, records: Iterable[Sequence[Any]]
    ) -> None:
        """`add`, each span given as the fields of a `SpanRecord` (no `SpanData` made)."""
        processor = self.processor
        if processor is None:
            return
        trace_id = int(context.trace_id, 16)
        for record in records:
            own, parent = _ids(context, run_id, record[0], record[1])
            processor.on_end(self._readable(trace_id, own, parent, record))

    def _readable(
        self, trace_id: int, own: int, parent: int | None, record: Sequence[Any]
    ) -> ReadableSpan:
        _, parent_id, name, kind, start, end, attributes, events, status, message = record[:10]
        return ReadableSpan(
            name=name,
            context=SpanContext(trace_id, own, is_remote=False, trace_flags=_SAMPLED),
            parent=None
            if parent is None
            else SpanContext(trace_id, parent, is_remote=parent_id is None, trace_flags=_SAMPLED),
            resource=self._resource,
            attributes=attributes,
            events=[Event(n, a, timestamp=int(ts * _NS)) for n, ts, a in events],
            kind=_KINDS[kind],
            status=_UNSET if status == "unset" else Status(_STATUS[status], message),
            start_time=int(start * _NS),
            end_time=int(end * _NS),
            instrumentation_scope=self._scope,
        )

    def shutdown(self) -> None:
        """Export what is queued and stop the processor."""
        if self.processor is not None:
            self.processor.shutdown()


class RequestExport:
    """Sends OTLP requests already serialized through the SDK's exporter that the variables name.

    Made by `request_export`. `resource` and `scope` are what `SpanSink` puts on its spans.
    """

    def __init__(self, exporter: SpanExporter, send: Callable[[bytes, int], bool]) -> None:
        self._exporter = exporter
        self._send = send
        named = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "harness"}
        self.resource: Mapping[str, Any] = dict(Resource.create(named).attributes)
        """The resource's attributes."""
        self.scope: tuple[str, str] = ("harness", _version())
        """The instrumentation scope's name and version."""

    def send(self, request: bytes, spans: int) -> bool:
        """Send one serialized `ExportTraceServiceRequest` of `spans` spans; whether it went."""
        return self._send(request, spans)

    def shutdown(self) -> None:
        """Close the exporter's connections."""
        self._exporter.shutdown()


def request_export(kind: str | None = None) -> RequestExport | None:
    """A `RequestExport` for OTLP (HTTP/protobuf or gRPC); `None` for any other exporter.

    `None` too when the installed exporter does not have the hook this build uses to hand it
    serialized bytes (then spans go through `batch_sink`, as `ReadableSpan`s).

    Raises:
        ConfigError: An exporter or protocol this build does not know.
    """
    name = exporter_name(kind)
    if name == "otlp grpc":
        grpc_exporter = _grpc_bytes_exporter()
        return RequestExport(grpc_exporter, grpc_exporter.send)
    if name != "otlp http/protobuf":
        return None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HTTPSpanExporter,
    )

    exporter = HTTPSpanExporter()
    post = getattr(getattr(exporter, "_client", None), "export", None)
    if not callable(post):
        exporter.shutdown()
        return None

    def send(request: bytes, spans: int) -> bool:
        return bool(getattr(post(request), "success", False))

    return RequestExport(exporter, send)


class _Serialized:
    """A request already serialized, passed where the gRPC exporter expects spans."""

    __slots__ = ("request", "spans")

    def __init__(self, request: bytes, spans: int) -> None:
        self.request = request
        self.spans = spans


def _grpc_bytes_exporter() -> Any:
    """The SDK's gRPC span exporter, taught to send a `_Serialized` request as it is."""
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.sdk.trace.export import SpanExportResult

    class Exporter(OTLPSpanExporter):
        def _translate_data(self, data: Any) -> ExportTraceServiceRequest:
            if isinstance(data, _Serialized):
                return ExportTraceServiceRequest.FromString(data.request)
            return super()._translate_data(data)

        def _count_data(self, data: Any) -> int:
            return data.spans if isinstance(data, _Serialized) else len(data)

        def send(self, request: bytes, spans: int) -> bool:
            return self.export(_Serialized(request, spans)) is SpanExportResult.SUCCESS  # type: ignore[arg-type]

    return Exporter()


class OtelExport(SpanExport):
    """Exports a run's finished spans through an OpenTelemetry span processor, in this process.

    Args:
        exporter: Where spans go; from the `OTEL_*` variables when omitted.
        processor: The processor to feed; a `BatchSpanProcessor` over `exporter` when
            omitted (tests may give a `SimpleSpanProcessor`).
    """

    def __init__(
        self, exporter: SpanExporter | None = None, *, processor: SpanProcessor | None = None
    ) -> None:
        if processor is None:
            exporter = exporter or exporter_from_env()
            processor = BatchSpanProcessor(exporter) if exporter is not None else None
        self._sink = SpanSink(processor)

    def export(self, context: TraceContext, run_id: str, spans: Sequence[SpanData]) -> None:
        """Hand each span to the processor, with its OpenTelemetry ids."""
        self._sink.add(context, run_id, spans)

    def export_records(
        self, context: TraceContext, run_id: str, records: Sequence[SpanRecord]
    ) -> None:
        """`export`, the spans as the builder made them (no `SpanData` made on the way)."""
        self._sink.add_records(context, run_id, records)

    def caller(self) -> TraceContext | None:
        """The caller's active span, if it is a valid one."""
        return current_context()

    def shutdown(self) -> None:
        """Export what is queued and stop the processor."""
        self._sink.shutdown()


def batch_sink(kind: str | None = None) -> SpanSink:
    """A `SpanSink` exporting in batches to the exporter the `OTEL_*` variables (or `kind`) name.

    Raises:
        ConfigError: An exporter or protocol this build does not know.
    """
    exporter = exporter_from_env(kind)
    return SpanSink(BatchSpanProcessor(exporter) if exporter is not None else None)


def current_context() -> TraceContext | None:
    """The active OpenTelemetry span of the caller, if it is a valid one."""
    found = trace.get_current_span().get_span_context()
    if not found.is_valid:
        return None
    return TraceContext(
        trace_id=format(found.trace_id, "032x"),
        span_id=format(found.span_id, "016x"),
        sampled=found.trace_flags.sampled,
    )


class _HashedResource(Resource):
    """A `Resource` that computes its hash once.

    The OTLP encoder hashes the resource of every span, and the SDK's hash serialises
    every attribute to JSON each time.
    """

    def __init__(self, resource: Resource) -> None:
        super().__init__(dict(resource.attributes), resource.schema_url)
        self._hash = super().__hash__()

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return super().__eq__(other)


def _ids(
    context: TraceContext, run_id: str, span_id: str, parent_id: str | None
) -> tuple[int, int | None]:
    """A span's own id and its parent's, as OpenTelemetry integers."""
    if parent_id is None:
        parent = context.parent_span_id
        return int(context.span_id, 16), None if parent is None else int(parent, 16)
    own = int(child_span_id(run_id, span_id), 16)
    if parent_id == "run":
        return own, int(context.span_id, 16)
    return own, int(child_span_id(run_id, parent_id), 16)


def _version() -> str:
    try:
        return version("harness")
    except PackageNotFoundError:
        return "0"
