"""Live traces of a real run, caught by the SDK's in-memory exporter: the exact span tree,
the GenAI attributes, retries and fallbacks as events, errors, and content left out."""

import itertools
import json
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from harness.core.events import ContextCompacted, ModelCalled, payloads
from harness.observability import SpanExport, TraceContext
from harness.observability.spans import SpanRecord

from .conftest import TASK, scripted_run, tree


async def test_the_span_tree_of_a_run_with_a_retry_a_fallback_a_tool_error_and_a_compaction(
    tmp_path: Path,
) -> None:
    result, events, spans = await scripted_run(tmp_path)
    assert result.output == "the plan is safe"
    assert tree(spans) == [
        ("chat gpt-main", "step 1"),
        ("execute_tool boom", "step 1"),
        ("execute_tool dump", "step 1"),
        ("step 1", "invoke_agent tracer"),
        ("compact_context trim", "step 2"),
        ("chat gpt-main", "step 2"),
        ("step 2", "invoke_agent tracer"),
        ("invoke_agent tracer", None),
    ]
    assert len({s.context.trace_id for s in spans}) == 1
    by_name = {s.name: s for s in spans}
    run = by_name["invoke_agent tracer"]
    assert run.kind is SpanKind.INTERNAL
    assert dict(run.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "tracer",
        "gen_ai.conversation.id": result.run_id,
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-main",
        "harness.strategy": "react",
        "harness.termination": "final_answer",
        "gen_ai.usage.input_tokens": 340,
        "gen_ai.usage.output_tokens": 27,
    }
    stored = TraceContext.parse(_trace_parent(events, tmp_path, result.run_id))
    assert format(run.context.span_id, "016x") == stored.span_id
    assert format(run.context.trace_id, "032x") == stored.trace_id
    assert run.start_time == int(events[0].ts * 1e9)
    assert run.end_time == int(events[-1].ts * 1e9)


async def test_chat_spans_carry_the_genai_attributes_and_retries_and_fallbacks_as_events(
    tmp_path: Path,
) -> None:
    result, events, spans = await scripted_run(tmp_path)
    first, second = [s for s in spans if s.name == "chat gpt-main"]
    assert first.kind is SpanKind.CLIENT
    attributes = dict(first.attributes or {})
    request_id = attributes.pop("harness.request.id")
    assert attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-main",
        "gen_ai.conversation.id": result.run_id,
        "gen_ai.response.finish_reasons": ("tool_calls",),
        "gen_ai.response.model": "gpt-main",
        "gen_ai.usage.input_tokens": 300,
        "gen_ai.usage.output_tokens": 20,
    }
    called = payloads(events, ModelCalled)
    assert request_id == called[0].request_id
    (retry,) = first.events
    assert retry.name == "model_retry"
    assert dict(retry.attributes or {}) == {
        "harness.attempt": 1,
        "harness.max_attempts": 2,
        "harness.delay_s": 0.001,
        "error.type": "ModelServerError",
        "http.response.status_code": 500,
    }
    assert [e.name for e in second.events] == ["model_retry", "model_fallback"]
    fallback = dict(second.events[1].attributes or {})
    assert fallback["harness.fallback.from"] == "gpt-main"
    assert fallback["harness.fallback.to"] == "gpt-spare"
    assert fallback["http.response.status_code"] == 500
    assert dict(second.attributes or {})["gen_ai.usage.input_tokens"] == 40
    assert dict(second.attributes or {})["gen_ai.response.model"] == "gpt-spare"  # it answered
    assert second.status.status_code is StatusCode.UNSET


async def test_tool_spans_and_the_compaction_span(tmp_path: Path) -> None:
    _, events, spans = await scripted_run(tmp_path)
    by_name = {s.name: s for s in spans}
    failed, ok = by_name["execute_tool boom"], by_name["execute_tool dump"]
    assert failed.status.status_code is StatusCode.ERROR
    assert dict(failed.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "boom",
        "gen_ai.tool.call.id": "call_0",
        "gen_ai.tool.type": "function",
        "harness.tool.status": "tool_error",
        "error.type": "tool_error",
    }
    assert failed.status.description is None  # the tool's message is content: not captured
    assert ok.status.status_code is StatusCode.UNSET
    assert dict(ok.attributes or {})["harness.tool.status"] == "ok"
    compaction = by_name["compact_context trim"]
    (event,) = [e for e in events if e.type == "context_compacted"]
    (compacted,) = payloads(events, ContextCompacted)
    assert dict(compaction.attributes or {}) == {
        "harness.compaction.tier": "trim",
        "harness.compaction.tokens_before": compacted.tokens_before,
        "harness.compaction.tokens_after": compacted.tokens_after,
        "harness.compaction.messages_removed": compacted.messages_removed,
    }
    assert compacted.tokens_before > compacted.tokens_after
    assert compaction.end_time == int(event.ts * 1e9)
    for span in spans:
        assert span.start_time is not None
        assert span.end_time is not None
        assert span.start_time <= span.end_time


async def test_no_message_content_is_captured_by_default(tmp_path: Path) -> None:
    _, _, spans = await scripted_run(tmp_path)
    text = json.dumps([dict(s.attributes or {}) for s in spans], default=str)
    text += json.dumps([dict(e.attributes or {}) for s in spans for e in s.events], default=str)
    for secret in (TASK, "the plan is safe", "lorem ipsum", "the vault is locked", "size"):
        assert secret not in text
    assert not any(
        key.startswith(
            ("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.a", "gen_ai.tool.call.r")
        )
        for s in spans
        for key in (s.attributes or {})
    )


async def test_content_is_captured_when_opted_in(tmp_path: Path) -> None:
    _, _, spans = await scripted_run(tmp_path, capture=True)
    by_name = {s.name: dict(s.attributes or {}) for s in spans}
    run = by_name["invoke_agent tracer"]
    assert json.loads(str(run["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": TASK}]}
    ]
    output = json.loads(str(run["gen_ai.output.messages"]))
    assert output[0]["parts"][0]["content"] == "the plan is safe"
    assert by_name["execute_tool dump"]["gen_ai.tool.call.arguments"] == '{"size": 3000}'
    assert str(by_name["execute_tool dump"]["gen_ai.tool.call.result"]).startswith("lorem ipsum")
    failed = next(s for s in spans if s.name == "execute_tool boom")
    assert "the vault is locked" in (failed.status.description or "")


def _trace_parent(events: object, home: Path, run_id: str) -> str:
    import sqlite3

    with sqlite3.connect(home / "harness.db") as db:
        (row,) = db.execute("SELECT trace_parent FROM runs WHERE run_id = ?", (run_id,))
    return str(row[0])


async def test_a_run_submitted_inside_a_span_joins_its_trace(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from harness import Agent, Harness
    from harness.observability.otel import OtelExport
    from harness.runtime import Settings
    from harness.testing import ScriptedModel

    exporter = InMemorySpanExporter()
    caller = TracerProvider().get_tracer("the-app")
    export = OtelExport(processor=SimpleSpanProcessor(exporter))
    async with Harness(Settings(home=tmp_path), traces=export) as h:
        with caller.start_as_current_span("handle request") as outer:
            result = await h.run(Agent(name="inner", model=ScriptedModel(["ok"])), "hi")
        record = await h.get(result.run_id)
    (run,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent inner"]
    assert run.context.trace_id == outer.get_span_context().trace_id
    assert run.parent is not None
    assert run.parent.span_id == outer.get_span_context().span_id
    assert record.metadata["trace_caller"] == format(outer.get_span_context().span_id, "016x")


async def test_runs_left_out_by_the_sampler_export_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from harness import Agent, Harness
    from harness.observability.otel import OtelExport
    from harness.runtime import Settings
    from harness.testing import ScriptedModel

    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    exporter = InMemorySpanExporter()
    export = OtelExport(processor=SimpleSpanProcessor(exporter))
    async with Harness(Settings(home=tmp_path), traces=export) as h:
        result = await h.run(Agent(name="unseen", model=ScriptedModel(["ok"])), "hi")
        record = await h.get(result.run_id)
    assert exporter.get_finished_spans() == ()
    assert record.trace_parent is not None
    assert record.trace_parent.endswith("-00")  # stored: a takeover keeps the decision


class Keep(SpanExport):
    """A span export that keeps the records it is handed."""

    def __init__(self) -> None:
        self.records: list[SpanRecord] = []

    def export_records(self, context: TraceContext, run_id: str, records: object) -> None:
        self.records += records  # type: ignore[operator]


async def unknown(run_id: str) -> None:
    """A run's stored trace context: none (the tests begin each run themselves)."""
    return None


@pytest.mark.parametrize("cuts", [(1, 2, 5), (3, 4, 9, 10), tuple(range(1, 40))])
async def test_events_taken_a_step_at_a_time_make_the_spans_they_make_one_at_a_time(
    tmp_path: Path, cuts: tuple[int, ...]
) -> None:
    from harness.observability import LiveTraces

    _, events, _ = await scripted_run(tmp_path)
    context = TraceContext.new()
    one, batched = Keep(), Keep()
    single, grouped = LiveTraces(one, unknown), LiveTraces(batched, unknown)
    for traces in (single, grouped):
        traces.begin(events[0].run_id, context)
    for event in events:
        single(event)
    bounds = [0, *(c for c in cuts if c < len(events)), len(events)]
    for start, end in itertools.pairwise(bounds):
        grouped.batch(events[start:end])
    assert len(one.records) == 8
    assert batched.records == one.records


async def test_published_event_by_event_through_the_bus_the_trace_loses_no_rare_event(
    tmp_path: Path,
) -> None:
    """The bus hands LiveTraces only the classes it reads (`event_types`): a compaction,
    a retry, a fallback and a tool error still shape the spans, exactly as fed directly."""
    from harness.core.events import ModelDelta, RunEvent
    from harness.observability import LiveTraces
    from harness.runtime import EventBus

    _, events, _ = await scripted_run(tmp_path)
    run_id, context = events[0].run_id, TraceContext.new()
    direct, bused = Keep(), Keep()
    fed, subscribed = LiveTraces(direct, unknown), LiveTraces(bused, unknown)
    bus = EventBus()
    bus.subscribe(subscribed)
    for traces in (fed, subscribed):
        traces.begin(run_id, context)
    delta = RunEvent(run_id=run_id, seq=0, ts=events[1].ts, payload=ModelDelta(step=1, text="x"))
    for event in events:
        fed(event)
        bus.publish(event)
        bus.publish(delta)  # live-only: never given to the trace subscriber
    assert ModelDelta not in subscribed.event_types
    assert bused.records == direct.records
    names = [record[2] for record in bused.records]
    assert any(name.startswith("compact_context ") for name in names)
    events_on_spans = [e[0] for record in bused.records for e in record[7]]
    assert "model_retry" in events_on_spans
    assert "model_fallback" in events_on_spans
    assert any(record[8] == "error" for record in bused.records)  # the failing tool
