"""A run stays one trace when it is paused and resumed by another Harness, and when another
process takes it over after its owner was SIGKILLed: every span carries the stored trace id,
and the run span is exported once, with its stored id, by whoever sees the run end."""

import asyncio
import sys
import time
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from harness import Agent, Harness, tool
from harness.observability import TraceContext, child_span_id
from harness.observability.forward import ForwardedTraces
from harness.observability.otel import OtelExport
from harness.runtime import Settings
from harness.runtime.harness import stored_context
from harness.testing import FunctionModel, call, reply

from .collectors import OTLPHTTPReceiver

sys.path.insert(0, str(Path(__file__).parent.parent / "runtime" / "processes"))
from kill_agents import deployer
from owner_process import OwnerProcess


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _counting(request: object) -> object:
    done = sum(1 for m in getattr(request, "messages", ()) if m.role == "tool")
    return reply(None, call("add", {"a": done, "b": 1}, id=f"c{done}")) if done < 3 else reply("3")


def _export() -> tuple[OtelExport, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    return OtelExport(processor=SimpleSpanProcessor(exporter)), exporter


async def _until(h: Harness, run_id: str, state: str) -> None:
    async with asyncio.timeout(30):
        while (await h.get(run_id)).state != state:
            await asyncio.sleep(0.02)


async def test_a_run_paused_here_and_resumed_by_another_harness_is_one_trace(
    tmp_path: Path,
) -> None:
    agent = Agent(name="counter", model=FunctionModel(_counting, latency_s=0.2), tools=[add])  # type: ignore[arg-type]
    first_export, first = _export()
    async with Harness(Settings(home=tmp_path), traces=first_export) as h:
        run_id = await h.submit(agent, "count to 3")
        await asyncio.sleep(0.1)
        await h.pause(run_id)
        await _until(h, run_id, "PAUSED")
        stored = (await h.get(run_id)).trace_parent
    second_export, second = _export()
    async with Harness(Settings(home=tmp_path), agents=(agent,), traces=second_export) as h:
        await h.resume(run_id)
        result = await h.wait(run_id, timeout=30)
    assert result.output == "3"
    assert stored is not None
    context = TraceContext.parse(stored)
    before, after = first.get_finished_spans(), second.get_finished_spans()
    assert before
    assert after
    spans = [*before, *after]
    assert {format(s.context.trace_id, "032x") for s in spans} == {context.trace_id}
    (run,) = [s for s in spans if s.name == "invoke_agent counter"]  # exported once
    assert run in after
    assert format(run.context.span_id, "016x") == context.span_id
    (pause,) = [s for s in after if s.name == "pause"]
    assert pause.parent is not None
    assert pause.parent.span_id == run.context.span_id
    assert run.start_time is not None
    assert pause.start_time is not None
    assert run.start_time < min(s.start_time or 0 for s in before)  # from run_submitted
    _one_tree(spans, run)


async def test_a_run_taken_over_after_a_sigkill_is_one_trace(
    tmp_path: Path, store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OTLPHTTPReceiver() as receiver:
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")  # the child exports over OTLP/HTTP
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
        with OwnerProcess(tmp_path, store_target, "deployer", "deploy 1") as owner:
            run_id = owner.run_id
            assert run_id is not None
            shipped = receiver.spans.wait_for("chat function")  # step 1's reply, exported
            owner.kill()  # while the deploy waits for approval: step 1 never ended there
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
        export, exporter = _export()
        async with Harness(
            Settings(home=tmp_path),
            store=store_target,
            agents=(deployer(),),
            lease_s=1.0,
            traces=export,
        ) as second:
            await _until(second, run_id, "WAITING_TOOL")
            await _approve_when_asked(second, run_id)
            result = await second.wait(run_id, timeout=30)
            stored = (await second.get(run_id)).trace_parent
    assert result.output == "shipped 1"
    assert stored is not None
    context = TraceContext.parse(stored)
    assert {s.name for s in shipped} == {"chat function"}  # the rest was still open
    assert {s.trace_id for s in shipped} == {context.trace_id}
    (chat,) = shipped
    step_1 = child_span_id(run_id, "s3")  # opened by step_started, the run's 3rd event
    assert chat.parent_span_id == step_1
    after = exporter.get_finished_spans()
    assert {format(s.context.trace_id, "032x") for s in after} == {context.trace_id}
    by_id = {format(s.context.span_id, "016x"): s for s in after}
    lost = by_id[step_1]  # ended by the new owner, as lost with the old one
    assert lost.name == "step 1"
    assert lost.status.status_code is StatusCode.ERROR
    assert dict(lost.attributes or {})["error.type"] == "harness.owner_lost"
    (run,) = [s for s in after if s.name == "invoke_agent deployer"]
    assert format(run.context.span_id, "016x") == context.span_id
    assert [e.name for e in run.events] == ["run_recovered"]
    assert any(s.name == "approval deploy" for s in after)
    assert any(s.name == "execute_tool deploy" for s in after)


async def test_a_run_paused_and_resumed_is_one_trace_when_the_child_builds_the_spans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both Harnesses send their events to an export process that builds the spans: the
    second is told the stored context and fed the events before the resume, unexported."""
    agent = Agent(name="counter", model=FunctionModel(_counting, latency_s=0.2), tools=[add])  # type: ignore[arg-type]
    with OTLPHTTPReceiver() as receiver:
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        async with Harness(Settings(home=tmp_path)) as h:
            assert isinstance(h._traces, ForwardedTraces)  # pyright: ignore[reportPrivateUsage]
            run_id = await h.submit(agent, "count to 3")
            await asyncio.sleep(0.1)
            await h.pause(run_id)
            await _until(h, run_id, "PAUSED")
            stored = (await h.get(run_id)).trace_parent
        before = len(receiver.spans.items)  # the first Harness's child exported and exited
        async with Harness(Settings(home=tmp_path), agents=(agent,)) as h:
            await h.resume(run_id)
            result = await h.wait(run_id, timeout=30)
            events = await h.store.events(run_id)
        spans = receiver.spans.wait_for("invoke_agent counter")
    assert result.output == "3"
    assert stored is not None
    context = TraceContext.parse(stored)
    assert 0 < before < len(spans)
    assert {s.trace_id for s in spans} == {context.trace_id}
    (run,) = [s for s in spans if s.name == "invoke_agent counter"]  # exported once
    assert spans.index(run) >= before
    assert run.span_id == context.span_id
    (pause,) = [s for s in spans if s.name == "pause"]
    assert pause.parent_span_id == run.span_id
    assert run.start_ns == int(events[0].ts * 1e9)  # from run_submitted, before the pause
    assert len({s.span_id for s in spans}) == len(spans)  # none exported twice
    ids = {s.span_id for s in spans}
    assert all(s.parent_span_id in ids for s in spans if s is not run)


async def test_a_run_not_sampled_is_not_sent_to_the_child_before_or_after_a_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stored decision holds in the Harness that resumes it: nothing is exported."""
    agent = Agent(name="counter", model=FunctionModel(_counting, latency_s=0.2), tools=[add])  # type: ignore[arg-type]
    with OTLPHTTPReceiver() as receiver:
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
        async with Harness(Settings(home=tmp_path)) as h:
            run_id = await h.submit(agent, "count to 3")
            await asyncio.sleep(0.1)
            await h.pause(run_id)
            await _until(h, run_id, "PAUSED")
        monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_on")  # new runs only: not this one
        async with Harness(Settings(home=tmp_path), agents=(agent,)) as h:
            traces = h._traces  # pyright: ignore[reportPrivateUsage]
            assert isinstance(traces, ForwardedTraces)
            await h.resume(run_id)
            assert (await h.wait(run_id, timeout=30)).output == "3"
            sampled = await h.run(agent, "count again", timeout=30)
            kept = (await h.get(sampled.run_id)).trace_parent
        spans = receiver.spans.wait_for("invoke_agent counter")
        time.sleep(0.2)  # anything else the children had went with it
        spans = list(receiver.spans.items)
    assert kept is not None
    assert {s.trace_id for s in spans} == {TraceContext.parse(kept).trace_id}  # its spans only
    (run,) = [s for s in spans if s.name == "invoke_agent counter"]
    assert run.attributes["gen_ai.conversation.id"] == sampled.run_id
    assert traces.export.dropped == 0


async def test_a_run_taken_over_is_one_trace_when_the_child_builds_the_spans(
    tmp_path: Path, store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OTLPHTTPReceiver() as receiver:
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
        with OwnerProcess(tmp_path, store_target, "deployer", "deploy 1") as owner:
            run_id = owner.run_id
            assert run_id is not None
            receiver.spans.wait_for("chat function")  # step 1's reply, exported
            owner.kill()  # while the deploy waits for approval: step 1 never ended there
        shipped = len(receiver.spans.items)
        async with Harness(
            Settings(home=tmp_path), store=store_target, agents=(deployer(),), lease_s=1.0
        ) as second:
            assert isinstance(second._traces, ForwardedTraces)  # pyright: ignore[reportPrivateUsage]
            await _until(second, run_id, "WAITING_TOOL")
            await _approve_when_asked(second, run_id)
            result = await second.wait(run_id, timeout=30)
            stored = (await second.get(run_id)).trace_parent
        spans = receiver.spans.wait_for("invoke_agent deployer")
    assert result.output == "shipped 1"
    assert stored is not None
    context = TraceContext.parse(stored)
    after = spans[shipped:]
    assert [s.name for s in spans[:shipped]] == ["chat function"]  # the rest was still open
    assert {s.trace_id for s in spans} == {context.trace_id}
    assert [(s.name, s.status_code) for s in after] == [  # 2: STATUS_CODE_ERROR
        ("approval deploy", 2),  # the old owner's, ended as lost with it
        ("execute_tool deploy", 2),
        ("step 1", 2),
        ("approval deploy", 0),  # asked again by the new owner
        ("execute_tool deploy", 0),
        ("chat function", 0),  # step 2's: step 1's was exported before the kill, once
        ("step 2", 0),
        ("invoke_agent deployer", 0),
    ]
    step_1 = child_span_id(run_id, "s3")
    (lost,) = [s for s in after if s.span_id == step_1]  # ended here, as lost with the old owner
    assert lost.name == "step 1"
    assert lost.attributes["error.type"] == "harness.owner_lost"
    (run,) = [s for s in after if s.name == "invoke_agent deployer"]
    assert run.span_id == context.span_id
    assert run.events == ["run_recovered"]


async def _approve_when_asked(h: Harness, run_id: str) -> None:
    async with asyncio.timeout(30):
        while not await h.pending_approvals(run_id):
            await asyncio.sleep(0.02)
    await h.approve(run_id, "d0", by="user:ops")


def _one_tree(spans: list[ReadableSpan], run: ReadableSpan) -> None:
    """Every span but the run span hangs, through its parents, from the run span."""
    ids = {s.context.span_id for s in spans}
    for span in spans:
        if span is run:
            assert span.parent is None
        else:
            assert span.parent is not None
            assert span.parent.span_id in ids


async def test_a_run_continued_from_a_failed_one_is_in_its_trace(tmp_path: Path) -> None:
    failures = iter([True])

    def flaky(request: object) -> object:
        if next(failures, False):
            raise RuntimeError("the model fell over")
        return reply("recovered")

    agent = Agent(name="again", model=FunctionModel(flaky))  # type: ignore[arg-type]
    export, exporter = _export()
    async with Harness(Settings(home=tmp_path), traces=export) as h:
        failed = await h.run(agent, "try")
        continued = await h.resume(failed.run_id)
        assert (await h.wait(continued, timeout=30)).output == "recovered"
        first = stored_context(await h.get(failed.run_id))
        second = stored_context(await h.get(continued))
    assert failed.termination == "error"
    assert second.trace_id == first.trace_id
    assert second.parent_span_id == first.span_id
    runs = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent again"]
    assert [s.status.status_code for s in runs] == [StatusCode.ERROR, StatusCode.UNSET]
    assert runs[1].parent is not None
    assert runs[1].parent.span_id == runs[0].context.span_id
    assert dict(runs[1].attributes or {})["harness.parent_run_id"] == failed.run_id
