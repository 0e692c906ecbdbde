"""Export over the wire, configured by the standard `OTEL_*` variables only: to a real OTLP
receiver on 127.0.0.1, over HTTP/protobuf and over gRPC."""

from pathlib import Path

import pytest

from harness import Agent, Harness
from harness.observability import TraceContext
from harness.runtime import load_settings
from harness.testing import FunctionModel, call, reply

from .collectors import OTLPGRPCReceiver, OTLPHTTPReceiver, Received


def _answer(request: object) -> object:
    messages = getattr(request, "messages", ())
    if not any(m.role == "tool" for m in messages):
        return reply(None, call("add", {"a": 1, "b": 2}, id="c1"))
    return reply("3")


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def _run(home: Path) -> tuple[str, TraceContext]:
    from harness import tool

    agent = Agent(
        name="adder", model=FunctionModel(_answer), tools=[tool(side_effects="none")(add)]
    )  # type: ignore[arg-type]
    async with Harness(load_settings(home)) as h:
        result = await h.run(agent, "add 1 and 2", timeout=30)
        record = await h.get(result.run_id)
    assert record.trace_parent is not None
    return result.run_id, TraceContext.parse(record.trace_parent)


def _check(spans: list[Received], run_id: str, context: TraceContext) -> None:
    names = sorted(s.name for s in spans)
    assert names == [
        "chat function",
        "chat function",
        "execute_tool add",
        "invoke_agent adder",
        "step 1",
        "step 2",
    ]
    assert {s.trace_id for s in spans} == {context.trace_id}
    (run,) = [s for s in spans if s.name == "invoke_agent adder"]
    assert run.span_id == context.span_id
    assert run.parent_span_id == ""
    assert run.attributes["gen_ai.conversation.id"] == run_id
    ids = {s.span_id for s in spans}
    assert all(s.parent_span_id in ids for s in spans if s is not run)
    assert {s.service for s in spans} == {"harness-tests"}


async def test_spans_reach_an_otlp_http_receiver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OTLPHTTPReceiver() as receiver:
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "harness-tests")
        run_id, context = await _run(tmp_path)
        spans = receiver.spans.wait_for("invoke_agent adder")  # flushed when the Harness closed
    assert set(receiver.paths) == {"/v1/traces"}
    _check(spans, run_id, context)


async def test_spans_reach_an_otlp_grpc_receiver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("grpc")
    with OTLPGRPCReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "harness-tests")
        (tmp_path / "harness.toml").write_text('[observability]\ntraces = "otlp"\n')
        run_id, context = await _run(tmp_path)
        spans = receiver.spans.wait_for("invoke_agent adder")
    _check(spans, run_id, context)


async def test_otel_sdk_disabled_turns_configured_tracing_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OTLPHTTPReceiver() as receiver:
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
        await _run(tmp_path)
    assert receiver.spans.items == []
