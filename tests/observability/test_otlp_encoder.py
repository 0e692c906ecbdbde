"""The export process writes OTLP protobuf itself (`harness.observability._otlp`): the same
request the SDK's encoder makes from `ReadableSpan`s, and what a real receiver decodes
carries every GenAI attribute of the run."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from harness import Harness
from harness.core import RunEvent
from harness.core.codec import pack, unpack
from harness.observability import TraceContext
from harness.observability._otlp import SpanEncoder
from harness.observability.context import child_span_id
from harness.observability.export_process import ProcessExport
from harness.observability.otel import SpanSink
from harness.observability.spans import SpanRecord, TraceBuilder
from harness.runtime import Settings
from harness.testing import FakeOpenAIServer

from .collectors import OTLPGRPCReceiver, OTLPHTTPReceiver, Received
from .conftest import AGENT, TASK, profiles, scripted_run, scripts


class Keep(SpanProcessor):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def _records(run_id: str, events: list[RunEvent], *, capture: bool) -> list[SpanRecord]:
    providers = {"main": "openai", "spare": "openai"}  # the profiles' provider
    builder = TraceBuilder(run_id, capture_content=capture, providers=providers)
    return [record for event in events for record in builder.feed_records(event)]


def _both(context: TraceContext, run_id: str, records: list[Any]) -> tuple[bytes, bytes]:
    """The request `SpanEncoder` writes for `records`, and the one the SDK's encoder writes."""
    keep = Keep()
    sink = SpanSink(keep)
    sink.add_records(context, run_id, records)
    scope = keep.spans[0].instrumentation_scope
    assert scope is not None
    assert scope.version is not None
    encoder = SpanEncoder(keep.spans[0].resource.attributes, scope.name, scope.version)
    ours = encoder.request(
        [encoder.spans(context.trace_id, context.span_id, context.parent_span_id, run_id, records)]
    )
    return ours, encode_spans(keep.spans).SerializeToString()


async def test_a_scripted_runs_request_is_the_sdks_byte_for_byte(tmp_path: Path) -> None:
    result, events, sdk_spans = await scripted_run(tmp_path, capture=True)
    run = next(s for s in sdk_spans if s.parent is None)
    context = TraceContext(
        trace_id=format(run.context.trace_id, "032x"), span_id=format(run.context.span_id, "016x")
    )
    records = _records(result.run_id, events, capture=True)
    assert {r[2] for r in records} >= {"compact_context trim", "execute_tool boom"}
    assert any(r[8] == "error" for r in records)
    assert any(r[7] for r in records)
    sent = unpack(pack(records))  # as the child gets them: JSON made the tuples lists
    ours, sdk = _both(context, result.run_id, sent)
    assert ours == sdk
    assert ExportTraceServiceRequest.FromString(ours) == encode_spans(sdk_spans)


def test_values_of_every_kind_a_remote_parent_and_an_error_encode_as_the_sdk_does() -> None:
    context = TraceContext(
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id="b7ad6b7169203331",
        parent_span_id="00f067aa0ba902b7",
    )
    attributes: dict[str, Any] = {
        "s": "x",
        "empty": "",
        "t": True,
        "f": False,
        "zero": 0,
        "one": 1,
        "big": 2**40,
        "negative": -3,
        "half": 0.5,
        "whole": 1.0,
        "list": ["stop", "length"],
        "ünïcode": "ß∂",
    }
    records: list[Any] = [
        ["s3", "run", "execute_tool x", "internal", 10.25, 10.5, attributes,
         [["harness.retry", 10.3, {"n": 1, "ok": False}]], "error", "it broke", True],
        ["s4", "s3", "chat m", "client", 10.3, 10.4, {"one": True}, [], "unset", None, True],
        ["run", None, "invoke_agent a", "internal", 10.0, 11.0, {"one": 1.0}, [], "unset",
         None, True],
    ]  # fmt: skip
    ours, sdk = _both(context, "run_1", records)
    assert ours == sdk
    spans = ExportTraceServiceRequest.FromString(ours).resource_spans[0].scope_spans[0].spans
    assert [s.flags for s in spans] == [0x100, 0x100, 0x300]  # the run span's parent is remote
    assert spans[2].parent_span_id.hex() == "00f067aa0ba902b7"
    assert spans[1].parent_span_id.hex() == child_span_id("run_1", "s3")


def _expected(run_id: str, context: TraceContext, events: list[RunEvent]) -> dict[str, Any]:
    """Each span's attributes by its OpenTelemetry id, as `harness trace` builds them."""
    out: dict[str, Any] = {}
    for record in _records(run_id, events, capture=False):
        own = context.span_id if record[1] is None else child_span_id(run_id, record[0])
        out[own] = {k: tuple(v) if isinstance(v, list) else v for k, v in record[6].items()}
    return out


def _genai(spans: list[Received], run_id: str) -> None:
    """The GenAI conventions' attributes, by hand, on what the receiver decoded."""
    by_name = {s.name: s for s in spans}
    run = by_name["invoke_agent tracer"]
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "tracer"
    assert run.attributes["gen_ai.conversation.id"] == run_id
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert chats
    assert all(c.kind == 3 for c in chats)  # SPAN_KIND_CLIENT
    for chat in chats:
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.conversation.id"] == run_id
        assert chat.attributes["gen_ai.provider.name"]
        assert chat.attributes["gen_ai.request.model"] in ("gpt-main", "gpt-spare")
    answered = [c for c in chats if "gen_ai.response.model" in c.attributes]
    assert {c.attributes["gen_ai.response.model"] for c in answered} == {"gpt-main", "gpt-spare"}
    usage = {
        (c.attributes["gen_ai.usage.input_tokens"], c.attributes["gen_ai.usage.output_tokens"])
        for c in answered
    }
    assert usage == {(300, 20), (40, 7)}
    reasons = {c.attributes["gen_ai.response.finish_reasons"] for c in answered}
    assert reasons == {("tool_calls",), ("stop",)}
    boom = by_name["execute_tool boom"]
    assert boom.attributes["gen_ai.operation.name"] == "execute_tool"
    assert boom.attributes["gen_ai.tool.name"] == "boom"
    assert boom.attributes["gen_ai.tool.call.id"]
    assert boom.attributes["error.type"] == "tool_error"
    assert boom.status_code == 2  # STATUS_CODE_ERROR
    assert by_name["execute_tool dump"].attributes["gen_ai.tool.name"] == "dump"
    retried = [c for c in chats if "model_retry" in c.events]
    assert retried
    assert any("model_fallback" in c.events for c in chats)


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
async def test_the_receiver_decodes_every_attribute_of_a_scripted_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, protocol: str
) -> None:
    if protocol == "grpc":
        pytest.importorskip("grpc")
    receiver = OTLPGRPCReceiver() if protocol == "grpc" else OTLPHTTPReceiver()
    main_script, spare_script = scripts()
    with receiver, FakeOpenAIServer(main_script) as main, FakeOpenAIServer(spare_script) as spare:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        export = ProcessExport("otlp")
        settings = Settings(home=tmp_path, profiles=profiles(main, spare))
        async with Harness(settings, traces=export) as h:
            result = await h.run(AGENT, TASK, timeout=30)
            events = await h.store.events(result.run_id)
            stored = (await h.get(result.run_id)).trace_parent
        spans = receiver.spans.wait_for("invoke_agent tracer")
    assert stored is not None
    context = TraceContext.parse(stored)
    assert {s.span_id: s.attributes for s in spans} == _expected(result.run_id, context, events)
    assert {s.trace_id for s in spans} == {context.trace_id}
    _genai(spans, result.run_id)


def _line(data: Any) -> bytes:
    return json.dumps(data).encode() + b"\n"


def test_lines_written_in_odd_pieces_reach_the_receiver_whole() -> None:
    """The child cuts lines out of whatever its pipe holds; a cut-off last line is ignored,
    and a line it cannot read is logged and skipped, the rest exported."""
    records: list[Any] = [
        ["s2", "run", "step 1", "internal", 1.0, 2.0, {"harness.step": 1}, [], "unset", None, True],
        ["run", None, "invoke_agent a", "internal", 1.0, 3.0, {}, [], "unset", None, True],
    ]  # fmt: skip
    contexts = [TraceContext.new() for _ in range(30)]
    data = b"".join(
        _line(["spans", c.trace_id, c.span_id, None, f"run_{i}", records])
        for i, c in enumerate(contexts)
    )
    hostile = b'{"v": 1, "run_id": "r"\n["nonsense"]\n\xff\xfe\n["begin", "r"]\n'
    cut = _line(["spans", contexts[0].trace_id, "00f067aa0ba902b7", None, "run_x", records])
    with OTLPHTTPReceiver() as receiver:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        env.pop("OTEL_EXPORTER_OTLP_PROTOCOL", None)
        command = [sys.executable, "-m", "harness.observability.export_process", "otlp"]
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert child.stdin is not None
        assert child.stderr is not None
        half = data.index(b"\n", len(data) // 2) + 1  # the hostile lines go between two
        for start in range(0, half, 7):
            child.stdin.write(data[start : start + 7])
            child.stdin.flush()
        child.stdin.write(hostile + data[half:])
        child.stdin.write(cut[:-3])
        child.stdin.close()
        assert child.wait(timeout=30) == 0
        errors = child.stderr.read().decode()
        child.stderr.close()
        spans = list(receiver.spans.items)
    assert len(spans) == 2 * len(contexts)
    assert {s.trace_id for s in spans} == {c.trace_id for c in contexts}
    assert {s.span_id for s in spans if s.name == "invoke_agent a"} == {c.span_id for c in contexts}
    assert errors.count("cannot read a line") == 4  # cut JSON, unknown, not UTF-8, short begin
    assert "(unknown line 'nonsense')" in errors
    assert "Traceback" not in errors


def test_a_flood_of_unreadable_lines_is_logged_ten_times_then_counted() -> None:
    span = ["run", None, "invoke_agent a", "internal", 1.0, 3.0, {}, [], "unset", None, True]
    records: list[Any] = [span]
    context = TraceContext.new()
    junk = b"".join(b"{not json %d\n" % i for i in range(25))
    with OTLPHTTPReceiver() as receiver:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        env.pop("OTEL_EXPORTER_OTLP_PROTOCOL", None)
        command = [sys.executable, "-m", "harness.observability.export_process", "otlp"]
        done = subprocess.run(
            command,
            input=junk + _line(["spans", context.trace_id, context.span_id, None, "r", records]),
            capture_output=True,
            env=env,
            timeout=30,
            check=False,
        )
        spans = list(receiver.spans.items)
    errors = done.stderr.decode()
    assert done.returncode == 0
    assert errors.count("cannot read a line") == 10
    assert "25 lines in all could not be read and were skipped" in errors
    assert [s.span_id for s in spans] == [context.span_id]  # what came after still went
