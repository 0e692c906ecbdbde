"""Run events: the envelope, one typed payload class per event type, and the sinks.

Each event type has a frozen, keyword-only dataclass named as the CamelCase of its type
(`tool_completed` is `ToolCompleted`); a subscriber dispatches on the class:

    match event.payload:
        case ToolCompleted(tool=tool, ok=False):
            ...

The fields are the keys of the event's JSON payload, in the order they are written
(`harness.core.codec`). A field that older logs may lack has a default; it decodes to that
default when absent and is left out again when encoded (`OMIT_WHEN`), so that stored logs
re-encode byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, Protocol, TypeVar, get_args

from harness.core._frozen import fast_init, set_class, twin
from harness.core.usage import Prices, Usage

if TYPE_CHECKING:
    from harness.core.messages import Message

__all__ = [
    "EVENT_CLASSES",
    "EVENT_TYPES",
    "OMIT_WHEN",
    "PRESENCE_OF",
    "SUMMARY_CHARS",
    "AgentMessage",
    "ApprovalDecided",
    "ApprovalRequested",
    "ChildFinished",
    "ChildStarted",
    "CompletionChecked",
    "ContextCompacted",
    "EventPayload",
    "EventSink",
    "EventType",
    "Handoff",
    "HintInjected",
    "MessageReceived",
    "MessageSent",
    "ModelCalled",
    "ModelDelta",
    "ModelFallback",
    "ModelResponded",
    "ModelRetry",
    "PlanCreated",
    "PlanUpdated",
    "RunCancelled",
    "RunEvent",
    "RunFailed",
    "RunFinished",
    "RunPaused",
    "RunRecovered",
    "RunResumed",
    "RunSink",
    "RunStarted",
    "RunSubmitted",
    "RunWaiting",
    "StepStarted",
    "TextToolCalls",
    "ToolCallRef",
    "ToolCompleted",
    "ToolStarted",
    "TriggerFired",
    "WaitEnded",
    "new_event",
    "payloads",
    "summarize",
]

EventType = Literal[
    "run_submitted",
    "run_started",
    "step_started",
    "model_called",
    "model_responded",
    "model_delta",
    "model_retry",
    "model_fallback",
    "agent_message",
    "tool_started",
    "tool_completed",
    "approval_requested",
    "approval_decided",
    "context_compacted",
    "completion_checked",
    "hint_injected",
    "plan_created",
    "plan_updated",
    "run_waiting",
    "run_paused",
    "run_resumed",
    "run_recovered",
    "run_finished",
    "run_failed",
    "run_cancelled",
    "handoff",
    "child_started",
    "child_finished",
    "wait_ended",
    "message_sent",
    "message_received",
    "trigger_fired",
]
"""Every event type. Types may be added; they are never renamed."""

EVENT_TYPES: Final[frozenset[str]] = frozenset(get_args(EventType))

SUMMARY_CHARS: Final = 200
"""Tool results appear in events as summaries of at most this many characters."""


OMIT_WHEN: Final = "harness.omit_when"
"""Field metadata: a predicate `(payload, value) -> bool`; when true the key is not written."""

PRESENCE_OF: Final = "harness.presence_of"
"""Field metadata: the field is not written; it records whether the named key was."""


def _optional(default: Any = None) -> Any:
    """A field older logs may lack: absent means `default`, and `default` is not written."""

    def omit(_payload: Any, value: Any) -> bool:
        return value == default

    return field(default=default, metadata={OMIT_WHEN: omit})


def _only_when(check: str) -> Any:
    """A `CompletionChecked` field written only by checks of kind `check`."""

    def omit(payload: Any, _value: Any) -> bool:
        return payload.check != check

    return field(default=None, metadata={OMIT_WHEN: omit})


def _from_text_unrecorded(payload: Any, _value: Any) -> bool:
    return not payload.from_text_recorded


class EventPayload:
    """The details of one event: the base of the event classes."""

    __slots__ = ()
    type: ClassVar[EventType]
    """The event type this class is the payload of."""


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallRef:
    """A tool call named in a `ModelResponded` event."""

    id: str
    """The call's id."""
    name: str
    """The tool called."""


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class TextToolCalls:
    """Tool calls a model wrote as text, read by the gateway's text call parser."""

    format: str
    """The text format the calls were read in."""
    calls: int
    """Calls read."""
    malformed: int
    """Calls that could not be read (the model is told why)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunSubmitted(EventPayload):
    """A run was created and queued."""

    type: ClassVar[EventType] = "run_submitted"
    agent: str
    """The agent's name."""
    task: str
    """The task as given."""
    parent_run_id: str | None
    """The run this one continues, if any."""
    task_type: str | None = _optional()
    """The kind of task, for aggregation (`submit(task_type=...)`)."""
    experiment: str | None = _optional()
    """The A/B experiment the run takes part in (`[experiments.NAME]`)."""
    variant: str | None = _optional()
    """The experiment's variant it was assigned."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunStarted(EventPayload):
    """The agent loop started (or restarted, after a resume or takeover) the run."""

    type: ClassVar[EventType] = "run_started"
    agent: str
    """The agent's name."""
    model: str
    """The resolved model's name."""
    strategy: str | None = _optional()
    """The agent's strategy (older logs lack it)."""
    tools: tuple[str, ...]
    """The names of the tools the model may call."""
    max_steps: int
    """The step limit."""
    task_type: str | None = _optional()
    """The kind of task, for aggregation."""
    experiment: str | None = _optional()
    """The A/B experiment the run takes part in."""
    variant: str | None = _optional()
    """The experiment's variant it was assigned."""


@dataclass(frozen=True, kw_only=True, slots=True)
class StepStarted(EventPayload):
    """A step (one model turn and its tool round) started."""

    type: ClassVar[EventType] = "step_started"
    step: int
    """The step's number, from 1."""
    wrap_up: bool = _optional(False)
    """Whether this is the closing turn of a stopped run that asks for a report."""
    reason: str | None = _optional()
    """Why the run stopped, on a wrap-up step."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelCalled(EventPayload):
    """A request was sent to the model."""

    type: ClassVar[EventType] = "model_called"
    step: int
    """The step."""
    model: str
    """The model's name."""
    messages: int
    """Messages sent."""
    tools: int | None = _optional()
    """Tools offered (older logs lack it)."""
    stream: bool
    """Whether the response is streamed."""
    request_id: str | None
    """The request's id, the same for every retry and fallback."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelResponded(EventPayload):
    """The model answered a request."""

    type: ClassVar[EventType] = "model_responded"
    step: int
    """The step."""
    finish_reason: str
    """Why the model stopped writing."""
    content: str
    """A summary of the reply's text."""
    usage: Usage
    """What the request consumed."""
    tool_calls: tuple[ToolCallRef, ...]
    """The tool calls of the reply."""
    tool_calls_from_text: TextToolCalls | None = field(
        default=None, metadata={OMIT_WHEN: _from_text_unrecorded}
    )
    """Calls read from the reply's text, if any were."""
    duration_s: float
    """Seconds the request took."""
    from_text_recorded: bool = field(default=True, metadata={PRESENCE_OF: "tool_calls_from_text"})
    """Whether the event has a `tool_calls_from_text` key (older logs lack it); not a key."""
    model: str | None = _optional()
    """The model that answered: the name of its profile (behind a fallback, the one that
    took over), else the model's own name; older logs lack it."""
    prices: Prices | None = _optional()
    """The prices the request was charged at; absent when they are unknown (and in older
    logs)."""
    response_model: str | None = _optional()
    """The model the provider says answered, when it says so and it is not the model asked
    for (a fallback's, a dated snapshot of the name asked for); absent otherwise."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelDelta(EventPayload):
    """A piece of streamed text (published live, never stored)."""

    type: ClassVar[EventType] = "model_delta"
    step: int
    """The step."""
    text: str
    """The text."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelRetry(EventPayload):
    """A model request failed and will be tried again."""

    type: ClassVar[EventType] = "model_retry"
    request_id: str | None
    """The request's id."""
    model: str
    """The model retried."""
    attempt: int
    """The attempt that failed, from 1."""
    max_attempts: int
    """Attempts allowed in all."""
    status: int | None
    """The HTTP status of the failure, if any."""
    error: str | None
    """The error's class name."""
    message: str | None
    """The error's message, shortened."""
    delay_s: float
    """Seconds waited before the next attempt."""
    retry_after_s: float | None
    """The wait the server asked for, if it did."""
    step: int = 0
    """The step; the gateway leaves it 0 and the agent loop fills it in."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelFallback(EventPayload):
    """A request went on to the next model of a fallback chain."""

    type: ClassVar[EventType] = "model_fallback"
    request_id: str | None
    """The request's id."""
    from_model: str
    """The model that failed or was skipped."""
    to_model: str
    """The model tried next."""
    reason: str
    """`error`, `context_overflow` or `context_window`."""
    status: int | None
    """The HTTP status of the failure, if any."""
    error: str | None
    """The error's class name, if any."""
    message: str | None
    """The error's message, shortened."""
    delay_s: float
    """Seconds waited before the next model."""
    estimated_tokens: int | None = _optional()
    """The request's estimated tokens (reason `context_window`)."""
    context_window: int | None = _optional()
    """The skipped model's context window (reason `context_window`)."""
    step: int = 0
    """The step; the gateway leaves it 0 and the agent loop fills it in."""


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentMessage(EventPayload):
    """The model wrote text: along with tool calls, as an answer, or the final answer."""

    type: ClassVar[EventType] = "agent_message"
    step: int
    """The step."""
    content: str | None
    """The text."""
    final: bool | None = _optional()
    """Whether it is the run's final answer (older logs lack it)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolStarted(EventPayload):
    """A tool call was made (it may still wait for approval)."""

    type: ClassVar[EventType] = "tool_started"
    step: int
    """The step."""
    call_id: str
    """The call's id."""
    tool: str
    """The tool called."""
    arguments: str
    """A summary of the call's JSON arguments."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCompleted(EventPayload):
    """A tool call ended: it ran, failed, was denied, or was not run."""

    type: ClassVar[EventType] = "tool_completed"
    step: int
    """The step."""
    call_id: str
    """The call's id."""
    tool: str
    """The tool called."""
    status: str
    """How it ended (`ok`, `tool_error`, `denied`, `not_run`, ...: `ToolOutcome.status`)."""
    ok: bool
    """Whether it succeeded."""
    result: str
    """A summary of the result the model sees."""
    truncated: bool
    """Whether the result was cut to fit."""
    duration_s: float
    """Seconds it ran."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalRequested(EventPayload):
    """A tool call waits for a person's decision."""

    type: ClassVar[EventType] = "approval_requested"
    step: int
    """The step."""
    call_id: str
    """The call's id."""
    tool: str
    """The tool called."""
    arguments: str
    """A summary of the call's JSON arguments."""
    reason: str | None
    """Why the policy asks."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalDecided(EventPayload):
    """A tool call that waited for approval was approved or denied."""

    type: ClassVar[EventType] = "approval_decided"
    step: int
    """The step."""
    call_id: str
    """The call's id."""
    approved: bool
    """Whether it may run."""
    by: str
    """Who decided."""
    reason: str | None
    """Why, if they said."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ContextCompacted(EventPayload):
    """What is sent to the model was compacted to fit its context window."""

    type: ClassVar[EventType] = "context_compacted"
    step: int
    """The step."""
    tier: str
    """What was done: `trim`, `summarize` or `stage_summary`."""
    tokens_before: int
    """Tokens of the request before compaction."""
    tokens_after: int
    """Tokens of the request sent."""
    messages_removed: int
    """History messages no longer sent."""
    messages_cut: int
    """Messages sent with part of their text cut out."""
    summary: str | None
    """The summary this compaction wrote, if any."""
    fallback: str | None
    """Why a summary tier trimmed instead, if it did."""
    usage: Usage
    """What the summary request consumed."""
    state: Mapping[str, Any] | None = _optional()
    """The window manager's state after it (`ContextState.from_event` reads it back)."""
    model: str | None = _optional()
    """The model that wrote the summary, when one was asked (see `ModelResponded.model`)."""
    prices: Prices | None = _optional()
    """The prices the summary request was charged at; absent when unknown or not asked."""


@dataclass(frozen=True, kw_only=True, slots=True)
class CompletionChecked(EventPayload):
    """A final answer was checked: against the output type, or by the verifier."""

    type: ClassVar[EventType] = "completion_checked"
    step: int
    """The step."""
    check: str
    """`output_type` or `verifier`."""
    output_type: str | None = _only_when("output_type")
    """The output type's name (`output_type` checks)."""
    passed: bool
    """Whether the answer passed."""
    feedback: str | None = _only_when("verifier")
    """A summary of the verifier's feedback (`verifier` checks)."""
    error: str | None = _only_when("verifier")
    """Why the verifier could not check, if it could not (`verifier` checks)."""
    errors: tuple[str, ...] | None = _only_when("output_type")
    """What does not match the output type, at most 10 (`output_type` checks)."""
    repair: bool | None = _only_when("output_type")
    """Whether the model was asked to repair its answer (`output_type` checks)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class HintInjected(EventPayload):
    """The harness told the model how to get out of repeated failures."""

    type: ClassVar[EventType] = "hint_injected"
    step: int
    """The step."""
    hint: str
    """What it was told."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PlanCreated(EventPayload):
    """The plan-and-execute strategy read a plan."""

    type: ClassVar[EventType] = "plan_created"
    step: int
    """The step."""
    steps: tuple[str, ...]
    """The plan's steps."""
    readable: bool
    """Whether the plan was read as the model was asked to write it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PlanUpdated(EventPayload):
    """The plan-and-execute strategy read a revised plan."""

    type: ClassVar[EventType] = "plan_updated"
    step: int
    """The step."""
    steps: tuple[str, ...]
    """The revised plan's steps."""
    readable: bool
    """Whether the plan was read as the model was asked to write it."""
    revision: int
    """The revision's number, from 1."""
    failed_step: str | None
    """The step that failed and led to the revision."""
    reason: str | None
    """How it failed."""
    done: tuple[str, ...]
    """The steps done before."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunWaiting(EventPayload):
    """The run waits for something outside it."""

    type: ClassVar[EventType] = "run_waiting"
    step: int
    """The step."""
    reason: str
    """What it waits for: `approval`, or the reason a parked tool call gives (`message`)."""
    call_id: str
    """The call waiting."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunPaused(EventPayload):
    """The run paused."""

    type: ClassVar[EventType] = "run_paused"
    at: str
    """Where: `step boundary`, `approval`, or `wait` (a parked tool call)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunResumed(EventPayload):
    """A paused run was queued again."""

    type: ClassVar[EventType] = "run_resumed"


@dataclass(frozen=True, kw_only=True, slots=True)
class RunRecovered(EventPayload):
    """A process took over a run whose owner stopped."""

    type: ClassVar[EventType] = "run_recovered"
    previous_owner: str | None
    """The owner that stopped."""
    state: str
    """The run's state when taken over."""
    owner: str
    """The new owner."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunFinished(EventPayload):
    """The run ended with an answer or at a stop condition."""

    type: ClassVar[EventType] = "run_finished"
    output: str | None
    """The final answer or the closing report."""
    termination: str
    """Why it ended (`TerminationReason`)."""
    complete: bool
    """Whether it ended with an accepted final answer."""
    usage: Usage
    """What the run consumed in all."""
    detail: str | None = _optional()
    """What stopped it, when a stop condition did."""
    output_valid: bool | None = _optional()
    """Whether the output matched the agent's output type, when it has one."""
    output_errors: tuple[str, ...] = _optional(())
    """What did not match the output type."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunFailed(EventPayload):
    """The run ended with an error."""

    type: ClassVar[EventType] = "run_failed"
    error: str | None
    """What went wrong."""
    error_type: str | None
    """The error's class name."""
    termination: str
    """Always `error`."""
    usage: Usage | None = _optional()
    """What the run consumed, when the loop ended it (not when it failed to start)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunCancelled(EventPayload):
    """The run was cancelled."""

    type: ClassVar[EventType] = "run_cancelled"
    by: str | None
    """Who cancelled it."""
    reason: str | None
    """Why, if they said."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Handoff(EventPayload):
    """An agent handed the conversation over to another agent; the run goes on under it."""

    type: ClassVar[EventType] = "handoff"
    step: int
    """The step whose tool call handed over."""
    call_id: str
    """The handoff tool call."""
    from_agent: str
    """The agent that handed over."""
    to_agent: str
    """The agent the run continues under."""
    reason: str | None
    """Why, as the model said in the call (`None` when it did not)."""
    count: int
    """Handoffs of the run so far, this one included (from 1)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ChildStarted(EventPayload):
    """A call of an agent tool started a child run, or found the one it started before."""

    type: ClassVar[EventType] = "child_started"
    call_id: str
    """The call of the agent tool."""
    child_run_id: str
    """The child run (derived from the run and the call: the same for a call made again)."""
    agent: str
    """The child's agent."""
    task: str
    """The child's task, summarized."""
    depth: int
    """The child's depth: 1 for a child of a run that is no child."""
    existed: bool
    """The child existed already: the call was made again (after a takeover) and waits for
    the child it started before, not a new one."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ChildFinished(EventPayload):
    """A child run ended and its result went back to the call that started it."""

    type: ClassVar[EventType] = "child_finished"
    call_id: str
    """The call of the agent tool."""
    child_run_id: str
    """The child run."""
    state: str
    """How it ended: `COMPLETED`, `FAILED` or `CANCELLED`."""
    termination: str | None
    """Why it ended."""
    usage: Usage
    """What the child and its own children consumed (counted in the run's children usage,
    never in its own)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class WaitEnded(EventPayload):
    """A tool call that waited for something outside the run (`run_waiting`) goes on.

    The run is RUNNING again once no other call of its step still waits (`waiting` is 0).
    """

    type: ClassVar[EventType] = "wait_ended"
    step: int
    """The step."""
    reason: str
    """What it waited for, as its `run_waiting` said."""
    call_id: str
    """The call that waited."""
    waited_s: float
    """How long it waited, in seconds."""
    waiting: int
    """Calls of the run that still wait."""


@dataclass(frozen=True, kw_only=True, slots=True)
class MessageSent(EventPayload):
    """The run sent a message to another run's inbox (the `send_message` tool)."""

    type: ClassVar[EventType] = "message_sent"
    to_run: str
    """The run it was sent to."""
    message_id: int
    """The message's id in the store's inbox."""
    call_id: str
    """The call that sent it."""
    content: str
    """What it said, summarized."""


@dataclass(frozen=True, kw_only=True, slots=True)
class MessageReceived(EventPayload):
    """A message from the run's inbox was added to its conversation (delivered once)."""

    type: ClassVar[EventType] = "message_received"
    message_id: int
    """The message's id in the store's inbox."""
    sender: str
    """Who sent it: a person (`user`), or the agent of the run that sent it."""
    sender_run: str | None
    """The run that sent it, when a run did."""
    call_id: str | None
    """The `wait_for_message` call whose result holds it; `None`: a user message at a step
    boundary."""
    content: str
    """What it said, summarized."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TriggerFired(EventPayload):
    """A trigger started this run on an event of another run (`Harness.on`, `[[triggers]]`)."""

    type: ClassVar[EventType] = "trigger_fired"
    trigger: str
    """The trigger's name."""
    source_run_id: str
    """The run whose event fired it."""
    source_seq: int
    """The `seq` of that event in its run."""
    source_event: str
    """That event's type."""


EVENT_CLASSES: Final[Mapping[str, type[EventPayload]]] = {
    cls.type: cls
    for cls in (
        RunSubmitted,
        RunStarted,
        StepStarted,
        ModelCalled,
        ModelResponded,
        ModelDelta,
        ModelRetry,
        ModelFallback,
        AgentMessage,
        ToolStarted,
        ToolCompleted,
        ApprovalRequested,
        ApprovalDecided,
        ContextCompacted,
        CompletionChecked,
        HintInjected,
        PlanCreated,
        PlanUpdated,
        RunWaiting,
        RunPaused,
        RunResumed,
        RunRecovered,
        RunFinished,
        RunFailed,
        RunCancelled,
        Handoff,
        ChildStarted,
        ChildFinished,
        WaitEnded,
        MessageSent,
        MessageReceived,
        TriggerFired,
    )
}
"""The payload class of each event type."""

for _payload_class in EVENT_CLASSES.values():
    fast_init(_payload_class)  # 11 payloads a run: each field set as a slot, not a setattr


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class RunEvent:
    """One thing that happened in a run, in the order it happened."""

    run_id: str
    """The run this event belongs to."""
    seq: int
    """Position in the run's timeline: starts at 1, no gaps."""
    ts: float
    """When it happened, in seconds since the epoch (UTC)."""
    payload: EventPayload
    """What happened: an instance of the event type's class (`ToolCompleted`, ...)."""
    stored: str | None = field(default=None, compare=False, repr=False)
    """The event's JSON as the store just wrote it (`None` for any other event).

    Set on the events a store's write returns, so that a subscriber sending events on
    (the trace export process) passes the text as it is instead of encoding it again.
    """

    @property
    def type(self) -> EventType:
        """The event type (`payload.type`)."""
        return self.payload.type


_EVENT_SLOTS: Final = twin(RunEvent)


def new_event(run_id: str, seq: int, ts: float, payload: EventPayload) -> RunEvent:
    """`RunEvent(run_id=..., seq=..., ts=..., payload=...)` at half its cost.

    Sinks make one per event of a run: built by its slots (see `core._frozen`).
    """
    event: Any = object.__new__(_EVENT_SLOTS)
    event.run_id = run_id
    event.seq = seq
    event.ts = ts
    event.payload = payload
    event.stored = None
    set_class(event, RunEvent)
    return event


_P = TypeVar("_P", bound=EventPayload)


def payloads(events: Iterable[RunEvent], cls: type[_P]) -> list[_P]:
    """The payloads of class `cls` among `events`, in order."""
    return [event.payload for event in events if isinstance(event.payload, cls)]


class EventSink(Protocol):
    """Where the agent loop reports what happens; the runtime numbers and persists it."""

    def emit(self, payload: EventPayload) -> None:
        """Record one event of the current run."""
        ...


class RunSink(EventSink, Protocol):
    """An `EventSink` that also keeps the run's messages and commits them step by step.

    The loop reports each message it adds to the conversation, and calls `checkpoint`
    where a step's work must be durable before it goes on: after the model answered
    (before any tool runs) and after the tools answered. Everything reported since the
    last checkpoint commits together, or not at all.
    """

    def message(self, message: Message) -> None:
        """Record one message added to the conversation."""
        ...

    def report_usage(self, total: Usage) -> None:
        """Record what the run has consumed so far (a resumed run's earlier usage included).

        The agent loop counts the run's usage, in one place, and reports the total each time
        it grows; the sink keeps the last total (it commits with the run's next step) and
        never counts usage itself.
        """
        ...

    async def commit(self) -> None:
        """Commit everything recorded so far, in the middle of a step; never interrupts."""
        ...

    async def checkpoint(self) -> None:
        """Commit everything recorded so far, at a step boundary.

        It may raise `RunInterrupted` to stop the run at this boundary (pause).
        """
        ...

    async def boundary(self) -> None:
        """A step boundary whose work is safe to redo after a crash (repeatable calls only).

        Like `checkpoint` when the run is to stop here; otherwise what was recorded may
        commit with the next step instead of now.
        """
        ...

    async def announce(self) -> None:
        """Before a long wait (a model call), commit if it matters.

        Commit now when someone watches the run live, or when a model reply is not durable
        yet; otherwise what was recorded may wait for the next commit.
        """
        ...


def summarize(text: str | None, limit: int = SUMMARY_CHARS) -> str:
    """Shorten `text` to at most `limit` characters for an event, marking any cut."""
    if not text:
        return ""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: limit - 1] + "…"
