"""Real OTLP receivers on 127.0.0.1 for the tests: HTTP/protobuf (http.server) and gRPC.

Each decodes `ExportTraceServiceRequest`s with opentelemetry-proto and keeps the spans.
"""

import gzip
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf.message import Message as ProtoMessage
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass
class Received:
    """One span as a collector saw it."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[str]
    status_code: int
    service: str


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    return getattr(value, kind) if kind else None


@dataclass
class Spans:
    """What a receiver got, thread-safe."""

    items: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, request: trace_service_pb2.ExportTraceServiceRequest) -> None:
        with self.lock:
            for resource_spans in request.resource_spans:
                attrs = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
                for scope in resource_spans.scope_spans:
                    for s in scope.spans:
                        self.items.append(
                            Received(
                                trace_id=s.trace_id.hex(),
                                span_id=s.span_id.hex(),
                                parent_span_id=s.parent_span_id.hex(),
                                name=s.name,
                                kind=s.kind,
                                start_ns=s.start_time_unix_nano,
                                end_ns=s.end_time_unix_nano,
                                attributes={a.key: _value(a.value) for a in s.attributes},
                                events=[e.name for e in s.events],
                                status_code=s.status.code,
                                service=str(attrs.get("service.name")),
                            )
                        )

    def wait_for(self, name: str, timeout_s: float = 20.0) -> list[Received]:
        """Every span so far, once one named `name` has arrived."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                if any(s.name == name for s in self.items):
                    return list(self.items)
            time.sleep(0.02)
        raise AssertionError(f"no span {name!r} arrived; got {[s.name for s in self.items]}")


class OTLPHTTPReceiver:
    """POST /v1/traces on 127.0.0.1, as an OpenTelemetry collector answers it."""

    def __init__(self) -> None:
        self.spans = Spans()
        self.paths: list[str] = []
        spans, paths = self.spans, self.paths

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = trace_service_pb2.ExportTraceServiceRequest()
                request.ParseFromString(body)
                paths.append(self.path)
                spans.add(request)
                reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "OTLPHTTPReceiver":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class OTLPGRPCReceiver:
    """The OTLP TraceService over gRPC on 127.0.0.1."""

    def __init__(self) -> None:
        import grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

        self.spans = Spans()
        spans = self.spans

        class Service(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: ProtoMessage, context: object) -> ProtoMessage:
                assert isinstance(request, trace_service_pb2.ExportTraceServiceRequest)
                spans.add(request)
                return trace_service_pb2.ExportTraceServiceResponse()

        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self._server)
        port = self._server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"http://127.0.0.1:{port}"

    def __enter__(self) -> "OTLPGRPCReceiver":
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop(grace=None)
