"""The span builder alone, fed hand-written events: each shape a run can take (and what
following many runs at once holds)."""

import dataclasses
import gc
from typing import Any

import pytest

from harness.core.events import EVENT_CLASSES, RunEvent
from harness.core.usage import Usage
from harness.observability import (
    LiveTraces,
    SpanData,
    SpanExport,
    TraceBuilder,
    TraceContext,
    child_span_id,
    split_model,
)

DEFAULTS: dict[str, Any] = {
    "parent_run_id": None,
    "task": "t",
    "tools": (),
    "max_steps": 10,
    "messages": 2,
    "stream": False,
    "request_id": None,
    "content": "",
    "usage": Usage(),
    "tool_calls": (),
    "duration_s": 0.0,
    "arguments": "{}",
    "result": "",
    "truncated": False,
    "reason": None,
    "complete": True,
    "output": None,
    "termination": "final_answer",
    "error": None,
    "error_type": None,
    "by": None,
    "at": "step",
    "state": "RUNNING",
    "step": 1,
}
"""Values for the fields a test does not care about."""


class Feed:
    """Numbers and times events as a store would, and keeps every finished span."""

    def __init__(self, **options: Any) -> None:
        self.builder = TraceBuilder("run_1", **options)
        self.seq = 0
        self.spans: list[SpanData] = []

    def __call__(self, type: str, ts: float, **payload: Any) -> list[SpanData]:
        self.seq += 1
        cls = EVENT_CLASSES[type]
        fields = {f.name: DEFAULTS[f.name] for f in dataclasses.fields(cls) if f.name in DEFAULTS}
        event = RunEvent(run_id="run_1", seq=self.seq, ts=ts, payload=cls(**{**fields, **payload}))
        done = list(self.builder.feed(event))
        self.spans += done
        return done

    def named(self, name: str) -> SpanData:
        (span,) = [s for s in self.spans if s.name == name]
        return span


def started(feed: Feed) -> None:
    feed("run_submitted", 1.0, agent="ops", task="t", parent_run_id=None)
    feed("run_started", 1.1, agent="ops", model="openai:gpt-4.1-mini", strategy="react")
    feed("step_started", 1.2, step=1)


def test_a_model_call_that_fails_the_run_ends_its_chat_span_with_the_error_type() -> None:
    feed = Feed()
    started(feed)
    feed("model_called", 1.3, step=1, model="openai:gpt-4.1-mini", request_id="r1")
    done = feed("run_failed", 2.0, error="boom", error_type="ModelServerError", termination="error")
    assert [s.name for s in done] == ["chat gpt-4.1-mini", "step 1", "invoke_agent ops"]
    chat = feed.named("chat gpt-4.1-mini")
    assert chat.attributes["gen_ai.provider.name"] == "openai"
    assert chat.attributes["error.type"] == "ModelServerError"
    assert (chat.status, chat.status_message) == ("error", "boom")
    run = feed.named("invoke_agent ops")
    assert (run.status, run.attributes["harness.termination"]) == ("error", "error")
    assert run.attributes["gen_ai.provider.name"] == "openai"  # required on invoke_agent too
    assert run.attributes["gen_ai.request.model"] == "gpt-4.1-mini"
    assert (run.start, run.end) == (1.0, 2.0)
    assert feed.builder.ended


def test_a_cancelled_run_is_not_an_error() -> None:
    feed = Feed()
    started(feed)
    feed("run_cancelled", 3.0, by="user:me", reason=None)
    run = feed.named("invoke_agent ops")
    assert run.status == "unset"
    assert run.attributes["harness.termination"] == "cancelled"


def test_a_pause_is_a_span_of_the_run_and_ends_the_step() -> None:
    feed = Feed()
    started(feed)
    assert [s.name for s in feed("run_paused", 2.0, at=1)] == ["step 1"]
    assert [s.name for s in feed("run_resumed", 5.0)] == ["pause"]
    pause = feed.named("pause")
    assert (pause.parent_id, pause.start, pause.end) == ("run", 2.0, 5.0)


def test_an_approval_wait_is_a_span_under_its_tool_call() -> None:
    feed = Feed()
    started(feed)
    feed("tool_started", 1.5, step=1, call_id="c1", tool="deploy", arguments="{}")
    feed("approval_requested", 1.5, step=1, call_id="c1", tool="deploy", reason="asks")
    feed("approval_decided", 4.0, step=1, call_id="c1", approved=False, by="user:ops")
    feed(
        "tool_completed",
        4.0,
        step=1,
        call_id="c1",
        tool="deploy",
        status="denied",
        ok=False,
        duration_s=0.0,
    )
    approval, tool = feed.spans
    assert approval.name == "approval deploy"
    assert approval.parent_id == tool.span_id
    assert (approval.start, approval.end) == (1.5, 4.0)
    assert approval.attributes["harness.approval.approved"] is False
    assert tool.attributes["error.type"] == "denied"


def test_a_tool_span_covers_the_tools_own_time_not_the_wait_before_it() -> None:
    feed = Feed()
    started(feed)
    feed("tool_started", 2.0, step=1, call_id="c1", tool="bash", arguments="{}")
    feed(
        "tool_completed",
        10.0,
        step=1,
        call_id="c1",
        tool="bash",
        status="ok",
        ok=True,
        duration_s=0.5,
    )
    (tool,) = feed.spans
    assert (tool.start, tool.end) == (9.5, 10.0)


def test_a_call_never_started_still_gets_a_span() -> None:
    feed = Feed()
    started(feed)
    feed("tool_completed", 3.0, step=1, call_id="c9", tool="bash", status="not_run", ok=False)
    (tool,) = feed.spans
    assert (tool.name, tool.start, tool.end, tool.status) == (
        "execute_tool bash",
        3.0,
        3.0,
        "error",
    )


def test_a_takeover_ends_what_the_dead_owner_left_open() -> None:
    feed = Feed()
    started(feed)
    feed("model_called", 1.3, step=1, model="m")
    done = feed("run_recovered", 9.0, previous_owner="a", owner="b", state="RUNNING")
    assert [s.name for s in done] == ["chat m", "step 1"]
    assert {s.attributes["error.type"] for s in done} == {"harness.owner_lost"}
    feed("run_finished", 10.0, termination="final_answer", usage=Usage(input_tokens=3))
    run = feed.named("invoke_agent ops")
    assert [e.name for e in run.events] == ["run_recovered"]
    assert run.events[0].attributes == {"harness.previous_owner": "a", "harness.owner": "b"}


def test_task_type_is_an_attribute_of_the_run() -> None:
    feed = Feed()
    feed("run_submitted", 1.0, agent="ops", task="t", task_type="refund")
    feed("run_finished", 2.0, termination="final_answer")
    assert feed.named("invoke_agent ops").attributes["harness.task_type"] == "refund"


def test_close_cuts_open_spans_at_the_last_event() -> None:
    feed = Feed()
    started(feed)
    spans = feed.builder.close()
    assert [(s.name, s.end, s.finished) for s in spans] == [
        ("step 1", 1.2, False),
        ("invoke_agent ops", 1.2, False),
    ]


def test_content_needs_opting_in() -> None:
    for capture in (False, True):
        feed = Feed(capture_content=capture)
        feed("run_submitted", 1.0, agent="ops", task="the secret")
        feed("run_finished", 2.0, termination="final_answer", output="the answer")
        attributes = feed.named("invoke_agent ops").attributes
        assert ("gen_ai.input.messages" in attributes) is capture
        assert ("gen_ai.output.messages" in attributes) is capture


@pytest.mark.parametrize(
    ("label", "split"),
    [
        ("openai:gpt-4.1-mini", ("openai", "gpt-4.1-mini")),
        ("anthropic:claude-x", ("anthropic", "claude-x")),
        ("fast (qwen3)", ("fast", "qwen3")),
        ("fallback:main (gpt-main),spare (gpt-spare)", ("main", "gpt-main")),
        ("scripted", ("", "scripted")),
    ],
)
def test_model_labels(label: str, split: tuple[str, str]) -> None:
    assert split_model(label) == split


def test_the_provider_of_a_profile_comes_from_the_settings() -> None:
    feed = Feed(providers={"fast": "anthropic"})
    started(feed)
    feed("model_called", 1.3, step=1, model="fast (claude-x)")
    feed("model_responded", 1.4, step=1, finish_reason="stop", usage=Usage(input_tokens=1))
    assert feed.named("chat claude-x").attributes["gen_ai.provider.name"] == "anthropic"


def test_traceparents() -> None:
    context = TraceContext.new()
    assert TraceContext.parse(context.traceparent) == context
    child = TraceContext.new(context)
    assert (child.trace_id, child.parent_span_id) == (context.trace_id, context.span_id)
    assert child.span_id != context.span_id
    unsampled = TraceContext.parse(f"00-{'a' * 32}-{'b' * 16}-00")
    assert not unsampled.sampled
    for bad in ("", "00-xyz", f"00-{'0' * 32}-{'b' * 16}-01", f"01-{'a' * 32}-{'b' * 16}-01"):
        with pytest.raises(ValueError, match="not a W3C traceparent"):
            TraceContext.parse(bad)
    assert TraceContext.derived("run_1") == TraceContext.derived("run_1")
    assert child_span_id("run_1", "s3") != child_span_id("run_2", "s3")


def test_samplers_from_the_standard_variables() -> None:
    from harness.errors import ConfigError
    from harness.observability import Sampler

    assert Sampler.from_env({}) == Sampler(ratio=1.0, parent_based=True)
    assert Sampler.from_env({"OTEL_TRACES_SAMPLER": "always_off"}) == Sampler(
        ratio=0.0, parent_based=False
    )
    tenth = Sampler.from_env(
        {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"}
    )
    assert tenth == Sampler(ratio=0.1, parent_based=True)
    sampled = sum(tenth.new_context(None).sampled for _ in range(4000))
    assert 300 < sampled < 500
    caller = TraceContext.new()
    assert all(tenth.new_context(caller).sampled for _ in range(50))  # the caller decides
    unsampled = TraceContext.parse(f"00-{'a' * 32}-{'b' * 16}-00")
    assert not Sampler().new_context(unsampled).sampled
    assert not Sampler(ratio=0.0, parent_based=False).new_context(caller).sampled
    with pytest.raises(ConfigError, match="OTEL_TRACES_SAMPLER='sometimes'"):
        Sampler.from_env({"OTEL_TRACES_SAMPLER": "sometimes"})
    with pytest.raises(ConfigError, match="give a ratio from 0 to 1"):
        Sampler.from_env({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"})


def _event(run_id: str, seq: int, type: str, **payload: Any) -> RunEvent:
    cls = EVENT_CLASSES[type]
    fields = {f.name: DEFAULTS[f.name] for f in dataclasses.fields(cls) if f.name in DEFAULTS}
    return RunEvent(run_id=run_id, seq=seq, ts=float(seq), payload=cls(**{**fields, **payload}))


async def test_runs_followed_mid_call_hold_few_objects_the_collector_tracks() -> None:
    """A burst keeps thousands of runs in flight: each object the collector tracks per run
    lengthens its passes and brings its full collections sooner (it held 10, once)."""
    runs = 1000
    ids = [f"run_{i}" for i in range(runs)]
    opening = [
        ("run_submitted", {"agent": "ops"}),
        ("run_started", {"agent": "ops", "model": "openai:gpt-4.1-mini", "strategy": "react"}),
        ("step_started", {"step": 1}),
        ("model_called", {"step": 1, "model": "openai:gpt-4.1-mini", "request_id": "r1"}),
    ]
    events = [
        [_event(run_id, seq, type, **payload) for seq, (type, payload) in enumerate(opening, 1)]
        for run_id in ids
    ]
    contexts = [TraceContext.new() for _ in ids]

    async def unknown(run_id: str) -> None:
        return None

    exported: list[object] = []

    class Keep(SpanExport):
        def export_records(self, context: TraceContext, run_id: str, records: Any) -> None:
            exported.append(records)

    traces = LiveTraces(Keep(), unknown)
    gc.collect()
    before = len(gc.get_objects())
    for run_id, context, run_events in zip(ids, contexts, events, strict=True):
        traces.begin(run_id, context)
        for event in run_events:
            traces(event)
    gc.collect()
    held = (len(gc.get_objects()) - before) / runs
    assert exported == []  # the run, its step and its model call are all still open
    assert held < 5.5, f"{held:.1f} tracked objects per run in flight"
    for run_id in ids:  # and they all end as they should
        traces(_event(run_id, 5, "run_finished", usage=Usage()))
    assert len(exported) == runs
    assert {len(records) for records in exported} == {3}  # type: ignore[arg-type]
