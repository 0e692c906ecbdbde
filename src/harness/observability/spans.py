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

`TraceBuilder.feed` takes the events of one run in order and returns the spans they
finished. The live exporter (`harness.observability.live`) and `harness trace` feed it
alike, so the spans a collector receives and the waterfall drawn from the store agree.
Message content (the task, replies, tool arguments and results) is left out unless
`capture_content` is set, as the conventions require.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from harness.core.events import RunEvent

__all__ = ["AttributeValue", "SpanData", "SpanEvent", "SpanStatus", "TraceBuilder", "split_model"]

AttributeValue = str | bool | int | float | tuple[str, ...]
SpanStatus = Literal["unset", "ok", "error"]
SpanKind = Literal["internal", "client"]

_PROVIDERS: Final = frozenset({"openai", "anthropic"})
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


class _Open:
    """A span still open: mutable until it ends."""

    __slots__ = ("attributes", "events", "kind", "name", "parent_id", "span_id", "start")

    def __init__(
        self, span_id: str, parent_id: str | None, name: str, kind: SpanKind, start: float
    ) -> None:
        self.span_id = span_id
        self.parent_id = parent_id
        self.name = name
        self.kind: SpanKind = kind
        self.start = start
        self.attributes: dict[str, AttributeValue] = {}
        self.events: list[SpanEvent] = []


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


Getter = Callable[..., Any]
"""Reads one field of an event payload: `get(key)` or `get(key, default)`."""


def _reader(payload: Any) -> Getter:
    """A getter for a payload that is not a dict (a mapping, or a typed event)."""

    def get(key: str, default: Any = None) -> Any:
        return _get(payload, key, default)

    return get


def _get(payload: Any, key: str, default: Any = None) -> Any:
    """One field of an event payload: a mapping today, a typed event later."""
    if isinstance(payload, Mapping):
        return cast(Mapping[str, Any], payload).get(key, default)
    return getattr(payload, key, default)


_USAGE_KEYS: Final = (
    ("input_tokens", "gen_ai.usage.input_tokens"),
    ("output_tokens", "gen_ai.usage.output_tokens"),
    ("cached_tokens", "gen_ai.usage.cache_read.input_tokens"),
    ("reasoning_tokens", "gen_ai.usage.reasoning.output_tokens"),
)


def _usage(span: _Open, usage: Any, *, zero: bool = True) -> None:
    """Token counts (and cost) of `usage` on `span`; none at all if all are 0 and not `zero`."""
    if usage is None:
        return
    get: Getter = cast(dict[str, Any], usage).get if isinstance(usage, dict) else _reader(usage)
    if not zero and not (get("input_tokens") or get("output_tokens")):
        return
    for key, attribute in _USAGE_KEYS:
        value = get(key)
        if value or key in ("input_tokens", "output_tokens"):
            span.attributes[attribute] = int(value or 0)
    cost = get("cost_usd")
    if cost:
        span.attributes["harness.usage.cost_usd"] = float(cost)


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

    def __init__(
        self,
        run_id: str,
        *,
        capture_content: bool = False,
        providers: Mapping[str, str] | None = None,
    ) -> None:
        self.run_id = run_id
        self.capture_content = capture_content
        self._providers = providers or {}
        self._open: dict[str, _Open] = {}
        self._step: str | None = None
        self._chat: str | None = None
        self._pause: str | None = None
        self._calls: dict[str, str] = {}
        self._approvals: dict[str, str] = {}
        self._done: list[SpanData] = []
        self._last_ts = 0.0
        self.ended = False
        """Whether the run span has ended (a terminal event was fed)."""

    def feed(self, event: RunEvent) -> list[SpanData] | tuple[()]:
        """Take the run's next event; returns the spans it finished (children first)."""
        handler = _HANDLERS.get(event.type)
        if handler is not None:
            payload = event.payload
            handler(self, event, payload.get if isinstance(payload, dict) else _reader(payload))
        self._last_ts = event.ts
        if not self._done:
            return ()
        done, self._done = self._done, []
        return done

    def close(self) -> list[SpanData]:
        """End every open span at the last event, marked unfinished (a run still going)."""
        for span_id in reversed(list(self._open)):
            self._end(span_id, self._last_ts, finished=False)
        done, self._done = self._done, []
        return done

    # ----- the run

    def _submitted(self, event: RunEvent, get: Getter) -> None:
        run = self._run(event, get("agent") or "agent")
        parent = get("parent_run_id")
        if parent:
            run.attributes["harness.parent_run_id"] = parent
        self._task_type(run, get)
        if self.capture_content and get("task"):
            run.attributes["gen_ai.input.messages"] = _messages("user", get("task"))

    def _started(self, event: RunEvent, get: Getter) -> None:
        run = self._run(event, get("agent") or "agent")
        model = get("model")
        if model:
            run.attributes["gen_ai.request.model"] = split_model(model)[1]
        strategy = get("strategy")
        if strategy:
            run.attributes["harness.strategy"] = strategy
        self._task_type(run, get)

    def _run(self, event: RunEvent, agent: str) -> _Open:
        run = self._open.get("run")
        if run is None:
            run = self._open["run"] = _Open(
                "run", None, f"invoke_agent {agent}", "internal", event.ts
            )
            run.attributes.update(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": agent,
                    "gen_ai.conversation.id": self.run_id,
                }
            )
        return run

    def _task_type(self, run: _Open, get: Getter) -> None:
        task_type = get("task_type")
        if task_type:
            run.attributes["harness.task_type"] = task_type

    def _ended(self, event: RunEvent, get: Getter) -> None:
        failed = event.type == "run_failed"
        error_type = (get("error_type") or "error") if failed else None
        for span_id in reversed([s for s in self._open if s != "run"]):
            self._end(span_id, event.ts, error=error_type, message=get("error"))
        run = self._run(event, "agent")
        termination = get("termination") or ("cancelled" if event.type == "run_cancelled" else None)
        if termination:
            run.attributes["harness.termination"] = termination
        _usage(run, get("usage"))
        if self.capture_content and get("output"):
            run.attributes["gen_ai.output.messages"] = _messages("assistant", get("output"))
        self._end("run", event.ts, error=error_type, message=get("error"))
        self.ended = True

    def _paused(self, event: RunEvent, get: Getter) -> None:
        self._end_step(event.ts)
        self._pause = self._child(event, "pause", parent="run")

    def _resumed(self, event: RunEvent, get: Getter) -> None:
        if self._pause is not None:
            self._end(self._pause, event.ts)
            self._pause = None

    def _recovered(self, event: RunEvent, get: Getter) -> None:
        for span_id in reversed([s for s in self._open if s != "run"]):
            self._end(span_id, event.ts, error="harness.owner_lost", message=_LOST)
        attributes = {
            "harness.previous_owner": str(get("previous_owner") or ""),
            "harness.owner": str(get("owner") or ""),
        }
        self._mark(event, "run", attributes)

    # ----- steps, model calls, compactions

    def _step_started(self, event: RunEvent, get: Getter) -> None:
        self._end_step(event.ts)
        step = int(get("step") or 0)
        self._step = self._child(event, f"step {step}", parent="run")
        self._open[self._step].attributes["harness.step"] = step

    def _end_step(self, ts: float) -> None:
        if self._step is None:
            return
        for span_id in reversed([s for s, o in self._open.items() if o.parent_id == self._step]):
            self._end(span_id, ts)
        self._end(self._step, ts)

    def _called(self, event: RunEvent, get: Getter) -> None:
        if self._chat is not None:
            self._end(self._chat, event.ts)
        label = str(get("model") or "model")
        source, model = split_model(label)
        provider = self._providers.get(source) or (source if source in _PROVIDERS else "unknown")
        self._chat = self._child(event, f"chat {model}", kind="client")
        attributes = self._open[self._chat].attributes
        attributes["gen_ai.operation.name"] = "chat"
        attributes["gen_ai.provider.name"] = provider
        attributes["gen_ai.request.model"] = model
        attributes["gen_ai.conversation.id"] = self.run_id
        if get("stream"):
            attributes["gen_ai.request.stream"] = True
        if get("request_id"):
            attributes["harness.request.id"] = get("request_id")

    def _responded(self, event: RunEvent, get: Getter) -> None:
        if self._chat is None:
            return
        chat = self._open[self._chat]
        finish = str(get("finish_reason") or "")
        if finish:
            chat.attributes["gen_ai.response.finish_reasons"] = (finish,)
        response_model = get("response_model")
        if response_model:
            chat.attributes["gen_ai.response.model"] = response_model
        _usage(chat, get("usage"))
        if self.capture_content and get("content"):
            chat.attributes["gen_ai.output.messages"] = _messages(
                "assistant", get("content"), finish_reason=finish
            )
        self._end(self._chat, event.ts)
        self._chat = None

    def _retry(self, event: RunEvent, get: Getter) -> None:
        attributes: dict[str, AttributeValue] = {
            "harness.attempt": int(get("attempt") or 0),
            "harness.max_attempts": int(get("max_attempts") or 0),
            "harness.delay_s": float(get("delay_s") or 0.0),
        }
        self._error_fields(attributes, get)
        self._mark(event, self._chat or self._step or "run", attributes)

    def _fallback(self, event: RunEvent, get: Getter) -> None:
        attributes: dict[str, AttributeValue] = {
            "harness.fallback.from": split_model(str(get("from_model") or ""))[1],
            "harness.fallback.to": split_model(str(get("to_model") or ""))[1],
            "harness.fallback.reason": str(get("reason") or ""),
        }
        self._error_fields(attributes, get)
        self._mark(event, self._chat or self._step or "run", attributes)

    @staticmethod
    def _error_fields(attributes: dict[str, AttributeValue], get: Getter) -> None:
        error, status = get("error"), get("status")
        if error:
            attributes["error.type"] = str(error)
        if status is not None:
            attributes["http.response.status_code"] = int(status)

    def _compacted(self, event: RunEvent, get: Getter) -> None:
        tier = str(get("tier") or "trim")
        span_id = self._child(event, f"compact_context {tier}", start=self._last_ts or event.ts)
        span = self._open[span_id]
        span.attributes.update(
            {
                "harness.compaction.tier": tier,
                "harness.compaction.tokens_before": int(get("tokens_before") or 0),
                "harness.compaction.tokens_after": int(get("tokens_after") or 0),
                "harness.compaction.messages_removed": int(get("messages_removed") or 0),
            }
        )
        if get("fallback"):
            span.attributes["harness.compaction.fallback"] = str(get("fallback"))
        _usage(span, get("usage"), zero=False)
        self._end(span_id, event.ts)

    # ----- tools and approvals

    def _tool_started(self, event: RunEvent, get: Getter) -> None:
        span_id = self._tool_span(event, get)
        if self.capture_content and get("arguments"):
            self._open[span_id].attributes["gen_ai.tool.call.arguments"] = get("arguments")

    def _tool_span(self, event: RunEvent, get: Getter) -> str:
        tool, call_id = (
            str(get("tool") or "tool"),
            str(get("call_id") or ""),
        )
        span_id = self._child(event, f"execute_tool {tool}")
        self._open[span_id].attributes.update(
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.type": "function",
            }
        )
        self._calls[call_id] = span_id
        return span_id

    def _tool_completed(self, event: RunEvent, get: Getter) -> None:
        span_id = self._calls.pop(str(get("call_id") or ""), None)
        if span_id is None or span_id not in self._open:
            span_id = self._tool_span(event, get)
            self._calls.pop(str(get("call_id") or ""), None)
        span = self._open[span_id]
        # tool_started is written before approvals and before the calls of a step run;
        # the tool itself ran for duration_s up to its completion.
        span.start = max(span.start, event.ts - float(get("duration_s") or 0.0))
        status = str(get("status") or "")
        span.attributes["harness.tool.status"] = status
        if get("truncated"):
            span.attributes["harness.tool.truncated"] = True
        ok = bool(get("ok"))
        if self.capture_content and ok and get("result"):
            span.attributes["gen_ai.tool.call.result"] = get("result")
        message = get("result") if self.capture_content else None
        self._end(span_id, event.ts, error=None if ok else status or "error", message=message)

    def _approval_requested(self, event: RunEvent, get: Getter) -> None:
        call_id, tool = str(get("call_id") or ""), str(get("tool") or "tool")
        parent = self._calls.get(call_id)
        span_id = self._child(event, f"approval {tool}", parent=parent)
        self._open[span_id].attributes.update(
            {"gen_ai.tool.name": tool, "gen_ai.tool.call.id": call_id}
        )
        if get("reason"):
            self._open[span_id].attributes["harness.approval.reason"] = str(get("reason"))
        self._approvals[call_id] = span_id

    def _approval_decided(self, event: RunEvent, get: Getter) -> None:
        span_id = self._approvals.pop(str(get("call_id") or ""), None)
        if span_id is None or span_id not in self._open:
            return
        attributes = self._open[span_id].attributes
        attributes["harness.approval.approved"] = bool(get("approved"))
        attributes["harness.approval.by"] = str(get("by") or "")
        self._end(span_id, event.ts)

    def _note(self, event: RunEvent, get: Getter) -> None:
        """A moment worth seeing on the step: a completion check, a hint, a plan."""
        attributes: dict[str, AttributeValue] = {}
        for key in ("check", "passed", "revision"):
            value = get(key)
            if isinstance(value, str | bool | int):
                attributes[f"harness.{key}"] = value
        self._mark(event, self._step or "run", attributes)

    # ----- shared

    def _child(
        self,
        event: RunEvent,
        name: str,
        *,
        parent: str | None = None,
        kind: SpanKind = "internal",
        start: float | None = None,
    ) -> str:
        span_id = f"s{event.seq}" if event.seq not in (0, None) else f"s{len(self._open)}x"
        if span_id in self._open:
            span_id = f"{span_id}.{len(self._open)}"
        if "run" not in self._open:
            self._run(event, "agent")
        owner = parent or self._step or "run"
        self._open[span_id] = _Open(
            span_id, owner, name, kind, event.ts if start is None else start
        )
        return span_id

    def _mark(
        self, event: RunEvent, span_id: str, attributes: Mapping[str, AttributeValue]
    ) -> None:
        span = self._open.get(span_id) or self._open.get("run")
        if span is not None:
            span.events.append(SpanEvent(name=event.type, ts=event.ts, attributes=attributes))

    def _end(
        self,
        span_id: str,
        ts: float,
        *,
        error: str | None = None,
        message: str | None = None,
        finished: bool = True,
    ) -> None:
        span = self._open.pop(span_id, None)
        if span is None:
            return
        if span_id == self._step:
            self._step = None
        elif span_id == self._chat:
            self._chat = None
        if error is not None:
            span.attributes["error.type"] = error
        self._done.append(
            SpanData(
                span_id=span.span_id,
                parent_id=span.parent_id,
                name=span.name,
                kind=span.kind,
                start=span.start,
                end=max(ts, span.start),
                attributes=span.attributes,
                events=tuple(span.events),
                status="error" if error is not None else "unset",
                status_message=message if error is not None else None,
                finished=finished,
            )
        )


_METHODS: Final = {
    "run_submitted": "_submitted",
    "run_started": "_started",
    "run_finished": "_ended",
    "run_failed": "_ended",
    "run_cancelled": "_ended",
    "run_paused": "_paused",
    "run_resumed": "_resumed",
    "run_recovered": "_recovered",
    "step_started": "_step_started",
    "model_called": "_called",
    "model_responded": "_responded",
    "model_retry": "_retry",
    "model_fallback": "_fallback",
    "context_compacted": "_compacted",
    "tool_started": "_tool_started",
    "tool_completed": "_tool_completed",
    "approval_requested": "_approval_requested",
    "approval_decided": "_approval_decided",
    "completion_checked": "_note",
    "hint_injected": "_note",
    "plan_created": "_note",
    "plan_updated": "_note",
}
_HANDLERS: Final[dict[str, Callable[[TraceBuilder, RunEvent, Getter], None]]] = {
    kind: getattr(TraceBuilder, method) for kind, method in _METHODS.items()
}
"""Each event type that shapes the trace, and the method that reads it."""
