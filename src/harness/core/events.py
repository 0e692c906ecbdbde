"""Run events: the envelope and the vocabulary every layer speaks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, get_args

if TYPE_CHECKING:
    from harness.core.messages import Message

__all__ = [
    "EVENT_TYPES",
    "SUMMARY_CHARS",
    "EventSink",
    "EventType",
    "RunEvent",
    "RunSink",
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
]
"""Every event type. Types may be added; they are never renamed."""

EVENT_TYPES: Final[frozenset[str]] = frozenset(get_args(EventType))

SUMMARY_CHARS: Final = 200
"""Tool results appear in events as summaries of at most this many characters."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunEvent:
    """One thing that happened in a run, in the order it happened."""

    run_id: str
    """The run this event belongs to."""
    seq: int
    """Position in the run's timeline: starts at 1, no gaps."""
    ts: float
    """When it happened, in seconds since the epoch (UTC)."""
    type: EventType
    """What happened."""
    payload: Mapping[str, Any] = field(default_factory=lambda: {})
    """Details, JSON-compatible."""


class EventSink(Protocol):
    """Where the agent loop reports what happens; the runtime numbers and persists it."""

    def emit(self, type: EventType, payload: Mapping[str, Any]) -> None:
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
