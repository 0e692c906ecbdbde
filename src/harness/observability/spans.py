"""A run's events as a tree of spans, built incrementally: plain data, no OpenTelemetry.

One trace per run, named after the OpenTelemetry GenAI semantic conventions::

    invoke_agent {agent}                 the run: run_submitted → run_finished/failed/cancelled
    ├── step {n}                         step_started → the next step, a pause or the end
    │   ├── compact_context {tier}       context_compacted (from the step's previous event)
    │   ├── chat {model}                 model_called → model_responded; model_retry and
    │   │                                model_fallback are events on it
    │   └── execute_tool {tool}          tool_started → tool_completed
    │       └── approval {tool}          approval_requested → approval_decided
    └── pause                            run_paused → run_resumed

A handoff is an event on its step (`handoff`: from, to, count); the run span's
`harness.agent` names the agent the run went on under, and `harness.handoffs` counts them.

`TraceBuilder.feed` takes the events of one run in order and returns the spans they
finished. The live exporter (`harness.observability.live`) and `harness trace` feed it
alike, so the spans a collector receives and the waterfall drawn from the store agree.
Message content (the task, replies, tool arguments and results) is left out unless
`capture_content` is set, as the conventions require.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar

from harness.core.events import (
    ApprovalDecided,
    ApprovalRequested,
    CompletionChecked,
    ContextCompacted,
    EventPayload,
    Handoff,
    HintInjected,
    ModelCalled,
    ModelFallback,
    ModelResponded,
    ModelRetry,
    PlanCreated,
    PlanUpdated,
    RunCancelled,
    RunEvent,
    RunFailed,
    RunFinished,
    RunPaused,
    RunRecovered,
    RunResumed,
    RunStarted,
    RunSubmitted,
    StepStarted,
    ToolCompleted,
    ToolStarted,
)
from harness.core.usage import Usage

__all__ = [
    "TRACED_EVENTS",
    "AttributeValue",
    "EventRecord",
    "SpanData",
    "SpanEvent",
    "SpanRecord",
    "SpanStatus",
    "TraceBuilder",
    "span_data",
    "split_model",
]

AttributeValue = str | bool | int | float | tuple[str, ...]
SpanStatus = Literal["unset", "ok", "error"]
SpanKind = Literal["internal", "client"]
EventRecord = tuple[str, float, Mapping[str, AttributeValue]]
"""A span event as plain data: name, time, attributes."""
SpanRecord = tuple[
    str,
    str | None,
    str,
    SpanKind,
    float,
    float,
    dict[str, AttributeValue],
    Sequence[EventRecord],
    SpanStatus,
    str | None,
    bool,
]
"""A finished span as plain data, `SpanData`'s fields in their order (events as tuples).

What the builder makes; `span_data` turns it into a `SpanData`. The export process is sent
these as they are, so a live run pays for no object per span.
"""

_KNOWN_PROVIDERS: Final = {"openai": "openai", "anthropic": "anthropic"}
"""A model's source that names its provider (`openai:gpt-4.1-mini`), as that provider."""
_NO_PROVIDERS: Final[Mapping[str, str]] = {}
_LOST: Final = "the process executing the run stopped before this ended"


@dataclass(frozen=True, kw_only=True, slots=True)
class SpanEvent:
    """Something that happened at one moment inside a span (a retry, a fallback …)."""

    name: str
    """What happened: the run event's type."""
    ts: float
    """When, in seconds since the epoch."""
    attributes: Mapping[str, AttributeValue] = field(default_factory=lambda: {})
    """Details."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SpanData:
    """One finished span of a run's trace."""

    span_id: str
    """Its id within the run (`run`, or `s{seq}`: the seq of the event that opened it)."""
    parent_id: str | None
    """The id of the span it belongs to; `None` for the run span."""
    name: str
    """What it is, as the conventions name it (`chat gpt-4.1-mini`, `execute_tool bash` …)."""
    kind: SpanKind
    """`client` for a call to a model, `internal` otherwise."""
    start: float
    """When it started, in seconds since the epoch."""
    end: float
    """When it ended."""
    attributes: Mapping[str, AttributeValue]
    """What it did: `gen_ai.*`, `error.type`, `harness.*`."""
    events: tuple[SpanEvent, ...] = ()
    """Moments inside it: retries, fallbacks, recoveries, checks."""
    status: SpanStatus = "unset"
    """`error` when it failed; `unset` otherwise, as the conventions advise."""
    status_message: str | None = None
    """What went wrong, when it failed."""
    finished: bool = True
    """`False` for a span cut at the last event of a run that has not ended."""


_Span = list[Any]
"""A span still open: `[span_id, parent_id, name, kind, start, attributes, events]`.

A list, not an object: a run opens a span on most of its events, and a list is made in
one step where an object's `__init__` is a call. `events` stays `None` until the span has
one (a burst holds thousands of spans open at once, and each container the collector
tracks lengthens its passes).
"""
_NO_ATTRIBUTES: Final[dict[str, AttributeValue]] = {}
"""The attributes of a pause (shared: `_end` copies before a write)."""
_ID, _PARENT, _NAME, _KIND, _START, _ATTRIBUTES, _EVENTS = range(7)
_CACHE: Final = 1024
"""Distinct model labels and tool names whose span names are kept (past it, start over)."""
_CHATS: dict[str, tuple[str, str, str]] = {}
"""By model label: the chat span's name, the model's source and its name (`split_model`)."""
_TOOLS: dict[str, str] = {}
"""By tool name: its span's name."""
_AGENTS: dict[str, str] = {}
"""By agent name: its run span's name."""
_STEPS: dict[int, tuple[str, dict[str, AttributeValue]]] = {}
"""By step number: its span's name and attributes (shared: `_end` copies before a write)."""
_SPAN_IDS: list[str] = []
"""`s{seq}` for each seq met so far: a span's id by the seq of the event that opened it."""
_MAX_SEQ_IDS: Final = 4096


def _span_id(seq: int) -> str:
    """`s{seq}`, kept for the seqs every run has."""
    ids = _SPAN_IDS
    if seq < len(ids):
        return ids[seq]
    if seq >= _MAX_SEQ_IDS:
        return f"s{seq}"
    ids += (f"s{n}" for n in range(len(ids), seq + 1))
    return ids[seq]


_K = TypeVar("_K")
_V = TypeVar("_V")


def _kept(cache: dict[_K, _V], key: _K, value: _V) -> _V:
    """`value`, kept in `cache` under `key` (a full cache is emptied first)."""
    if len(cache) >= _CACHE:
        cache.clear()
    cache[key] = value
    return value


def _chat(label: str) -> tuple[str, str, str]:
    """The chat span's name, the model's source and name, for model `label` (kept)."""
    source, model = split_model(label)
    return _kept(_CHATS, label, (f"chat {model}", source, model))


def _agent(agent: str) -> str:
    """The name of the run span of agent `agent` (kept)."""
    return _kept(_AGENTS, agent, f"invoke_agent {agent}")


def _step(step: int) -> tuple[str, dict[str, AttributeValue]]:
    """The name and attributes of the span of step `step` (kept)."""
    return _kept(_STEPS, step, (f"step {step}", {"harness.step": step}))


def _tool(tool: str) -> str:
    """The name of a span of tool `tool` (kept)."""
    return _kept(_TOOLS, tool, f"execute_tool {tool}")


def span_data(record: SpanRecord) -> SpanData:
    """The `SpanData` of a span record."""
    span_id, parent_id, name, kind, start, end, attributes, events, status, message, done = record
    return SpanData(
        span_id=span_id,
        parent_id=parent_id,
        name=name,
        kind=kind,
        start=start,
        end=end,
        attributes=attributes,
        events=tuple(SpanEvent(name=n, ts=ts, attributes=a) for n, ts, a in events),
        status=status,
        status_message=message,
        finished=done,
    )


@functools.lru_cache(maxsize=1024)
def split_model(label: str) -> tuple[str, str]:
    """Where a model comes from and its name, as far as its label tells them.

    `openai:gpt-4.1-mini` is (`openai`, `gpt-4.1-mini`); a profile's `fast (qwen3)` is
    (`fast`, `qwen3`); a fallback chain `fallback:a (m),b (n)` is its first member's;
    anything else is (`""`, the label).
    """
    if label.startswith("fallback:"):
        label = label.removeprefix("fallback:").split(",")[0]
    name, paren, inner = label.partition(" (")
    if paren and inner.endswith(")"):
        return name, inner[:-1]
    source, colon, model = label.partition(":")
    if colon and model:
        return source, model
    return "", label


def _usage(attributes: dict[str, AttributeValue], usage: Usage) -> None:
    """Token counts (and cost) of `usage` in a span's `attributes`."""
    attributes["gen_ai.usage.input_tokens"] = usage.input_tokens
    attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
    if usage.cached_tokens:
        attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cached_tokens
    if usage.reasoning_tokens:
        attributes["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
    if usage.cost_usd:
        attributes["harness.usage.cost_usd"] = usage.cost_usd


def _error_fields(
    attributes: dict[str, AttributeValue], error: str | None, status: int | None
) -> None:
    if error:
        attributes["error.type"] = error
    if status is not None:
        attributes["http.response.status_code"] = status


def _messages(role: str, text: str, **extra: Any) -> str:
    """A message in the conventions' JSON form (`gen_ai.input/output.messages`)."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}], **extra}])


class TraceBuilder:
    """Turns one run's events, fed in order, into finished spans.

    Args:
        run_id: The run.
        capture_content: Put message content in attributes (the task, model replies, tool
            arguments and results). Off by default: it may hold personal data.
        providers: The provider (`openai`, `anthropic`) of each model profile, by name:
            `gen_ai.provider.name` of a model named after its profile.
    """

    __slots__ = (
        "_chat",
        "_done",
        "_last_ts",
        "_open",
        "_pause",
        "_providers",
        "_step",
        "capture_content",
        "ended",
        "run_id",
    )

    def __init__(
        self,
        run_id: str,
        *,
        capture_content: bool = False,
        providers: Mapping[str, str] | None = None,
    ) -> None:
        self.run_id = run_id
        self.capture_content = capture_content
        self._providers = providers if providers is not None else _NO_PROVIDERS
        self._open: dict[str, _Span] = {}
        self._step: _Span | None = None
        self._chat: _Span | None = None
        self._pause: str | None = None
        self._done: list[SpanRecord] | None = None  # spans ended by the event being fed
        self._last_ts = 0.0
        self.ended = False
        """Whether the run span has ended (a terminal event was fed)."""

    def feed(self, event: RunEvent) -> list[SpanData]:
        """Take the run's next event; returns the spans it finished (children first)."""
        return [span_data(record) for record in self.feed_records(event)]

    def feed_records(self, event: RunEvent) -> list[SpanRecord] | tuple[()]:
        """`feed`, the spans as records (what a live exporter sends on)."""
        handler = _HANDLERS.get(type(event.payload))
        if handler is not None:
            handler(self, event, event.payload)
        self._last_ts = event.ts
        done = self._done
        if done is None:
            return ()
        self._done = None
        return done

    def feed_batch(self, events: Sequence[RunEvent]) -> list[SpanRecord] | tuple[()]:
        """`feed_records` of each of `events` in turn; the spans they finished, together."""
        handlers = _HANDLERS
        for event in events:
            payload = event.payload
            handler = handlers.get(type(payload))
            if handler is not None:
                handler(self, event, payload)
            self._last_ts = event.ts  # a compaction's span starts at the event before it
        done = self._done
        if done is None:
            return ()
        self._done = None
        return done

    def close(self) -> list[SpanData]:
        """End every open span at the last event, marked unfinished (a run still going)."""
        for span in reversed(list(self._open.values())):
            self._end(span, self._last_ts, finished=False)
        done, self._done = self._done or [], None
        return [span_data(record) for record in done]

    # ----- the run

    def _submitted(self, event: RunEvent, p: RunSubmitted) -> None:
        attributes = self._run(event, p.agent)[_ATTRIBUTES]
        if p.parent_run_id:
            attributes["harness.parent_run_id"] = p.parent_run_id
        if p.task_type:
            attributes["harness.task_type"] = p.task_type
        if p.experiment and p.variant:
            _variant(attributes, p)
        if self.capture_content and p.task:
            attributes["gen_ai.input.messages"] = _messages("user", p.task)

    def _started(self, event: RunEvent, p: RunStarted) -> None:
        attributes = self._run(event, p.agent)[_ATTRIBUTES]
        if p.model:
            _, source, model = _CHATS.get(p.model) or _chat(p.model)
            attributes["gen_ai.provider.name"] = self._provider_of(source)
            attributes["gen_ai.request.model"] = model
        if p.strategy:
            attributes["harness.strategy"] = p.strategy
        if p.task_type:
            attributes["harness.task_type"] = p.task_type
        if p.experiment and p.variant:
            _variant(attributes, p)

    def _run(self, event: RunEvent, agent: str) -> _Span:
        run = self._open.get("run")
        if run is None:
            attributes: dict[str, AttributeValue] = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent,
                "gen_ai.conversation.id": self.run_id,
            }
            name = _AGENTS.get(agent) or _agent(agent)
            run = self._open["run"] = ["run", None, name, "internal", event.ts, attributes, None]
        return run

    def _ended(self, event: RunEvent, p: RunFinished | RunFailed | RunCancelled) -> None:
        error_type = message = None
        if type(p) is RunFailed:
            error_type, message = p.error_type or "error", p.error
        ts = event.ts
        if len(self._open) > 1:  # the run's children first, the latest first
            for span in reversed([s for s in self._open.values() if s[_ID] != "run"]):
                self._end(span, ts, error=error_type, message=message)
        run = self._run(event, "agent")
        attributes = run[_ATTRIBUTES]
        if isinstance(p, RunCancelled):
            attributes["harness.termination"] = "cancelled"
        else:
            attributes["harness.termination"] = p.termination
            if p.usage is not None:
                _usage(attributes, p.usage)
        if self.capture_content and type(p) is RunFinished and p.output:
            attributes["gen_ai.output.messages"] = _messages("assistant", p.output)
        if error_type is None:
            self._close(run, ts)
        else:
            self._end(run, ts, error=error_type, message=message)
        self.ended = True

    def _paused(self, event: RunEvent, p: RunPaused) -> None:
        self._end_step(event.ts)
        self._pause = self._child(event, "pause", _NO_ATTRIBUTES, "run")[_ID]

    def _resumed(self, event: RunEvent, p: RunResumed) -> None:
        if self._pause is not None:
            pause = self._open.get(self._pause)
            if pause is not None:
                self._close(pause, event.ts)
            self._pause = None

    def _recovered(self, event: RunEvent, p: RunRecovered) -> None:
        for span in reversed([s for s in self._open.values() if s[_ID] != "run"]):
            self._end(span, event.ts, error="harness.owner_lost", message=_LOST)
        attributes = {"harness.previous_owner": p.previous_owner or "", "harness.owner": p.owner}
        self._mark(event, "run", attributes)

    def _handoff(self, event: RunEvent, p: Handoff) -> None:
        attributes: dict[str, AttributeValue] = {
            "harness.handoff.from": p.from_agent,
            "harness.handoff.to": p.to_agent,
            "harness.handoff.count": p.count,
        }
        if self.capture_content and p.reason:
            attributes["harness.handoff.reason"] = p.reason
        self._mark(event, self._step_id(), attributes)
        run = self._run(event, p.from_agent)
        run[_ATTRIBUTES]["harness.agent"] = p.to_agent
        run[_ATTRIBUTES]["harness.handoffs"] = p.count

    # ----- steps, model calls, compactions

    def _step_started(self, event: RunEvent, p: StepStarted) -> None:
        if self._step is not None:
            self._end_step(event.ts)
        name, attributes = _STEPS.get(p.step) or _step(p.step)
        self._step = self._child(event, name, attributes, "run")

    def _end_step(self, ts: float) -> None:
        step = self._step
        if step is None:
            return
        if len(self._open) > 2:  # more than the run and the step: the step's may be open
            step_id = step[_ID]
            for span in reversed([s for s in self._open.values() if s[_PARENT] == step_id]):
                self._close(span, ts)
        self._close(step, ts)

    def _step_id(self) -> str:
        """The open step's span id, or the run's."""
        step = self._step
        return "run" if step is None else step[_ID]

    def _provider_of(self, source: str) -> str:
        """`gen_ai.provider.name` of a model from `source` (`split_model`'s first part)."""
        return self._providers.get(source) or _KNOWN_PROVIDERS.get(source, "unknown")

    def _called(self, event: RunEvent, p: ModelCalled) -> None:
        if self._chat is not None:
            self._close(self._chat, event.ts)
        label = p.model or "model"
        name, source, model = _CHATS.get(label) or _chat(label)
        provider = self._providers.get(source) or _KNOWN_PROVIDERS.get(source, "unknown")
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
            "gen_ai.conversation.id": self.run_id,
        }
        self._chat = self._child(event, name, attributes, None, "client")
        if p.stream:
            attributes["gen_ai.request.stream"] = True
        if p.request_id:
            attributes["harness.request.id"] = p.request_id

    def _responded(self, event: RunEvent, p: ModelResponded) -> None:
        chat = self._chat
        if chat is None:
            return
        attributes = chat[_ATTRIBUTES]
        if p.finish_reason:
            attributes["gen_ai.response.finish_reasons"] = (p.finish_reason,)
        if p.response_model:
            attributes["gen_ai.response.model"] = p.response_model
        _usage(attributes, p.usage)
        if self.capture_content and p.content:
            attributes["gen_ai.output.messages"] = _messages(
                "assistant", p.content, finish_reason=p.finish_reason
            )
        self._close(chat, event.ts)

    def _retry(self, event: RunEvent, p: ModelRetry) -> None:
        attributes: dict[str, AttributeValue] = {
            "harness.attempt": p.attempt,
            "harness.max_attempts": p.max_attempts,
            "harness.delay_s": p.delay_s,
        }
        _error_fields(attributes, p.error, p.status)
        self._mark(event, self._chat[_ID] if self._chat else self._step_id(), attributes)

    def _fallback(self, event: RunEvent, p: ModelFallback) -> None:
        attributes: dict[str, AttributeValue] = {
            "harness.fallback.from": split_model(p.from_model)[1],
            "harness.fallback.to": split_model(p.to_model)[1],
            "harness.fallback.reason": p.reason,
        }
        _error_fields(attributes, p.error, p.status)
        self._mark(event, self._chat[_ID] if self._chat else self._step_id(), attributes)

    def _compacted(self, event: RunEvent, p: ContextCompacted) -> None:
        attributes: dict[str, AttributeValue] = {
            "harness.compaction.tier": p.tier,
            "harness.compaction.tokens_before": p.tokens_before,
            "harness.compaction.tokens_after": p.tokens_after,
            "harness.compaction.messages_removed": p.messages_removed,
        }
        if p.fallback:
            attributes["harness.compaction.fallback"] = p.fallback
        name, start = f"compact_context {p.tier}", self._last_ts or event.ts
        span = self._child(event, name, attributes, None, "internal", start)
        usage = p.usage
        if usage.input_tokens or usage.output_tokens:
            _usage(attributes, usage)
        self._close(span, event.ts)

    # ----- tools and approvals

    def _tool_started(self, event: RunEvent, p: ToolStarted) -> None:
        span = self._tool_span(event, p.tool, p.call_id)
        if self.capture_content and p.arguments:
            span[_ATTRIBUTES]["gen_ai.tool.call.arguments"] = p.arguments

    def _tool_span(self, event: RunEvent, tool: str, call_id: str) -> _Span:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
        }
        return self._child(event, _TOOLS.get(tool) or _tool(tool), attributes)

    def _tool_completed(self, event: RunEvent, p: ToolCompleted) -> None:
        span = self._open_for(p.call_id, "execute_tool") or self._tool_span(
            event, p.tool, p.call_id
        )
        # tool_started is written before approvals and before the calls of a step run;
        # the tool itself ran for duration_s up to its completion.
        ts = event.ts
        ran_from = ts - p.duration_s
        if ran_from > span[_START]:
            span[_START] = ran_from
        attributes = span[_ATTRIBUTES]
        attributes["harness.tool.status"] = p.status
        if p.truncated:
            attributes["harness.tool.truncated"] = True
        if self.capture_content:
            if p.ok and p.result:
                attributes["gen_ai.tool.call.result"] = p.result
            self._end(span, ts, error=None if p.ok else p.status or "error", message=p.result)
        elif p.ok:
            self._close(span, ts)
        else:
            self._end(span, ts, error=p.status or "error")

    def _approval_requested(self, event: RunEvent, p: ApprovalRequested) -> None:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.tool.name": p.tool,
            "gen_ai.tool.call.id": p.call_id,
        }
        if p.reason:
            attributes["harness.approval.reason"] = p.reason
        tool_span = self._open_for(p.call_id, "execute_tool")
        parent = None if tool_span is None else tool_span[_ID]
        self._child(event, f"approval {p.tool}", attributes, parent)

    def _approval_decided(self, event: RunEvent, p: ApprovalDecided) -> None:
        span = self._open_for(p.call_id, None)
        if span is None:
            return
        attributes = span[_ATTRIBUTES]
        attributes["harness.approval.approved"] = p.approved
        attributes["harness.approval.by"] = p.by
        self._close(span, event.ts)

    def _open_for(self, call_id: str, operation: str | None) -> _Span | None:
        """The open span of call `call_id`: its tool's (`execute_tool`) or its approval's.

        Looked for among the open spans (a handful) rather than kept in a table by call id:
        a run in flight holds nothing more for its tool calls than their spans.
        """
        for span in reversed(self._open.values()):  # the latest, as a call id is reused
            attributes = span[_ATTRIBUTES]
            if (
                attributes.get("gen_ai.tool.call.id") == call_id
                and attributes.get("gen_ai.operation.name") == operation
            ):
                return span
        return None

    def _note(self, event: RunEvent, p: CompletionChecked | HintInjected | PlanCreated) -> None:
        """A moment worth seeing on the step: a completion check, a hint, a plan."""
        attributes: dict[str, AttributeValue] = {}
        if isinstance(p, CompletionChecked):
            attributes = {"harness.check": p.check, "harness.passed": p.passed}
        elif isinstance(p, PlanUpdated):
            attributes = {"harness.revision": p.revision}
        self._mark(event, self._step_id(), attributes)

    # ----- shared

    def _child(
        self,
        event: RunEvent,
        name: str,
        attributes: dict[str, AttributeValue],
        parent: str | None = None,
        kind: SpanKind = "internal",
        start: float | None = None,
    ) -> _Span:
        """A new span under `parent` (the open step, or the run), with `attributes`."""
        opened = self._open
        seq = event.seq
        if 0 < seq < len(_SPAN_IDS):
            span_id = _SPAN_IDS[seq]
        else:
            span_id = _span_id(seq) if seq else f"s{len(opened)}x"
        if span_id in opened:
            span_id = f"{span_id}.{len(opened)}"
        if "run" not in opened:
            self._run(event, "agent")
        if parent is None:
            parent = "run" if self._step is None else self._step[_ID]
        ts = event.ts if start is None else start
        span = opened[span_id] = [span_id, parent, name, kind, ts, attributes, None]
        return span

    def _mark(
        self, event: RunEvent, span_id: str, attributes: Mapping[str, AttributeValue]
    ) -> None:
        span = self._open.get(span_id) or self._open.get("run")
        if span is None:
            return
        if span[_EVENTS] is None:
            span[_EVENTS] = []
        span[_EVENTS].append((event.type, event.ts, attributes))

    def _close(self, span: _Span, ts: float) -> None:
        """End open `span` at `ts`: it did not fail."""
        del self._open[span[_ID]]
        if span is self._step:
            self._step = None
        elif span is self._chat:
            self._chat = None
        start = span[_START]
        record = (span[_ID], span[_PARENT], span[_NAME], span[_KIND], start,
                  ts if ts > start else start, span[_ATTRIBUTES], span[_EVENTS] or (),
                  "unset", None, True)  # fmt: skip
        if self._done is None:
            self._done = [record]
        else:
            self._done.append(record)

    def _end(
        self,
        span: _Span,
        ts: float,
        *,
        error: str | None = None,
        message: str | None = None,
        finished: bool = True,
    ) -> None:
        """End open `span` at `ts`, failed with `error` if one is given."""
        if error is None and finished:
            self._close(span, ts)
            return
        del self._open[span[_ID]]
        if span is self._step:
            self._step = None
        elif span is self._chat:
            self._chat = None
        status: SpanStatus = "unset"
        if error is None:
            message = None
        else:  # a copy: a step's attributes are shared by the steps of that number
            span[_ATTRIBUTES] = {**span[_ATTRIBUTES], "error.type": error}
            status = "error"
        start = span[_START]
        record = (span[_ID], span[_PARENT], span[_NAME], span[_KIND], start,
                  ts if ts > start else start, span[_ATTRIBUTES], span[_EVENTS] or (),
                  status, message, finished)  # fmt: skip
        if self._done is None:
            self._done = []
        self._done.append(record)


_METHODS: Final[dict[type[EventPayload], str]] = {
    RunSubmitted: "_submitted",
    RunStarted: "_started",
    RunFinished: "_ended",
    RunFailed: "_ended",
    RunCancelled: "_ended",
    RunPaused: "_paused",
    RunResumed: "_resumed",
    RunRecovered: "_recovered",
    StepStarted: "_step_started",
    ModelCalled: "_called",
    ModelResponded: "_responded",
    ModelRetry: "_retry",
    ModelFallback: "_fallback",
    ContextCompacted: "_compacted",
    ToolStarted: "_tool_started",
    ToolCompleted: "_tool_completed",
    ApprovalRequested: "_approval_requested",
    ApprovalDecided: "_approval_decided",
    CompletionChecked: "_note",
    HintInjected: "_note",
    PlanCreated: "_note",
    PlanUpdated: "_note",
    Handoff: "_handoff",
}
_HANDLERS: Final[dict[type[EventPayload], Callable[[TraceBuilder, RunEvent, Any], None]]] = {
    cls: getattr(TraceBuilder, method) for cls, method in _METHODS.items()
}
"""Each event class that shapes the trace, and the method that reads it."""
TRACED_EVENTS: Final[frozenset[type[EventPayload]]] = frozenset(_HANDLERS)
"""The event classes that shape a trace: the builder passes over any other."""


def _variant(attributes: dict[str, AttributeValue], p: RunSubmitted | RunStarted) -> None:
    """The run's A/B experiment and variant, as span attributes."""
    if p.experiment and p.variant:
        attributes["harness.experiment"] = p.experiment
        attributes["harness.experiment.variant"] = p.variant
