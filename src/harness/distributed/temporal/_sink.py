"""`WorkflowSink`: the `RunSink` of a run inside a workflow — events written by activities.

The sink keeps what the loop reports and seals it into keyed batches; every activity the
workflow starts carries the batches not yet known to be written and writes them before it
does anything else. So a step's events are durable before the model is called or a tool
runs, and most steps cost no activity of their own. A batch is a store step with an
idempotency key (`StepWrite.key`): an activity that is retried, or two activities started
at once that carry the same batch, write it once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import fields, replace
from typing import Any

from harness.core.codec import message_to_dict
from harness.core.events import (
    ApprovalDecided,
    EventPayload,
    ModelDelta,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunWaiting,
    WaitEnded,
)
from harness.core.messages import Message
from harness.core.states import RunState
from harness.core.usage import Usage
from harness.errors import RunInterrupted
from harness.store.protocol import RunUpdate
from harness.tools.audit import AuditRecord

from ._wire import Batch, event_to_dict, update_to_dict

__all__ = ["WorkflowSink"]

_STATE_AFTER: Mapping[type[EventPayload], str] = {
    RunWaiting: RunState.WAITING_TOOL,
    ApprovalDecided: RunState.RUNNING,
    WaitEnded: RunState.RUNNING,
}
"""The run row's state after these events (as the embedded `StoreSink` sets it)."""

_ENDS = (RunFinished, RunFailed, RunCancelled)

_AUDIT_KEYS = tuple(f.name for f in fields(AuditRecord))

Flush = Callable[[list[Batch]], Awaitable[None]]


class WorkflowSink:
    """Numbers a run's events in the workflow and hands them to activities to write.

    Args:
        run_id: The run.
        last_seq: The run's last stored event: this sink's events follow it, gap-free.
        key_prefix: Unique to the workflow execution (its Temporal run id): batch keys are
            `PREFIX:N`, the same on every replay.
        now: The workflow's clock (seconds since the epoch), for the events' times.
        flush: Writes batches now (the `harness.record` activity).
        pause_requested: Asked at each checkpoint; when true the run stops there.
        cancel_requested: Asked at each checkpoint; when true the run is cancelled there.
        usage: What the run consumed before.
    """

    def __init__(
        self,
        run_id: str,
        *,
        last_seq: int,
        key_prefix: str,
        now: Callable[[], float],
        flush: Flush,
        pause_requested: Callable[[], bool],
        cancel_requested: Callable[[], bool],
        usage: Usage,
    ) -> None:
        self.run_id = run_id
        self._prefix, self._now, self._flush = key_prefix, now, flush
        self._pause_requested = pause_requested
        self._cancel_requested = cancel_requested
        self._events: list[dict[str, Any]] = []
        self._messages: list[dict[str, Any]] = []
        self._audit: list[dict[str, Any]] = []
        self._blobs: dict[str, str] = {}
        self._state: str | None = None
        self._detail: Mapping[str, Any] | None = None
        self.usage = usage
        self._usage_changed = False
        self._children_usage: Usage | None = None
        self._delivered: list[int] = []
        self._sealed: list[Batch] = []
        self._batches = 0
        self.next_seq = last_seq + 1
        """The seq the next event gets."""
        self.state = RunState.RUNNING
        """The run's state as this sink last wrote it (the `state` query)."""

    # -- RunSink ---------------------------------------------------------------------------

    def emit(self, payload: EventPayload) -> None:
        """Keep one event for the next batch; live-only deltas have no live bus here."""
        if isinstance(payload, ModelDelta):
            return
        self._events.append(event_to_dict(payload, self._now()))
        state = _STATE_AFTER.get(type(payload))
        if state is not None and not (isinstance(payload, WaitEnded) and payload.waiting):
            self._state = state
            self._detail = _waiting(payload) if isinstance(payload, RunWaiting) else {}
        elif isinstance(payload, _ENDS):
            self._detail = {}

    def message(self, message: Message) -> None:
        """Keep one message for the next batch."""
        self._messages.append(message_to_dict(message))

    def report_usage(self, total: Usage) -> None:
        """Keep the run's usage so far; it is written with the next batch."""
        self.usage = total
        self._usage_changed = True

    def report_children_usage(self, total: Usage) -> None:
        """Keep what the run's ended children consumed; written with the next batch."""
        self._children_usage = total

    def deliver(self, message_id: int) -> None:
        """A message of the run's inbox read into its history: marked with the next batch."""
        self._delivered.append(message_id)

    def record(self, entry: AuditRecord) -> None:
        """Keep one audit record (the sink is the run's `AuditLog`)."""
        self._audit.append({key: getattr(entry, key) for key in _AUDIT_KEYS})

    def blob(self, key: str, text: str) -> None:
        """Keep one large text (a full tool result) for the next batch."""
        self._blobs[key] = text

    async def commit(self) -> None:
        """Nothing now: the next activity writes what was kept before it does anything."""

    async def checkpoint(self) -> None:
        """Stop here if a cancel or a pause was asked for (the workflow writes which)."""
        if self._cancel_requested():
            raise asyncio.CancelledError
        if self._pause_requested():
            raise RunInterrupted(f"run {self.run_id} paused at a step boundary")

    async def boundary(self) -> None:
        """Stop here if a pause was asked for."""
        await self.checkpoint()

    async def announce(self) -> None:
        """Nothing: the model call's activity writes the step first."""

    # -- batches ---------------------------------------------------------------------------

    def seal(self, update: RunUpdate | None = None) -> None:
        """Close what was kept into a batch of its own (with `update` to the run's row)."""
        if update is None and (self._state or self._usage_changed or self._children_usage):
            update = RunUpdate(state=self._state, usage=self.usage)
        if update is not None and self._children_usage is not None:
            update = replace(update, children_usage=self._children_usage)
        if update is not None and update.result_data is None and self._detail is not None:
            update = replace(update, result_data=self._detail)
        if not (
            self._events
            or self._messages
            or self._audit
            or self._blobs
            or update
            or self._delivered
        ):
            return
        self._batches += 1
        batch: Batch = {
            "key": f"{self._prefix}:{self._batches}",
            "first_seq": self.next_seq,
            "events": self._events,
            "messages": self._messages,
            "audit": self._audit,
            "blobs": self._blobs,
            "update": None if update is None else update_to_dict(update),
        }
        if self._delivered:
            batch["delivered"] = self._delivered
        self.next_seq += len(self._events)
        if update is not None and update.state is not None:
            self.state = RunState(update.state)
        self._sealed.append(batch)
        self._events, self._messages, self._audit, self._blobs = [], [], [], {}
        self._state, self._detail, self._usage_changed = None, None, False
        self._children_usage = None
        self._delivered = []

    def carried(self) -> list[Batch]:
        """Every batch not known to be written yet, what was kept sealed first."""
        self.seal()
        return list(self._sealed)

    def written(self, batches: list[Batch]) -> None:
        """`batches` are in the store: no activity carries them any more."""
        done = {batch["key"] for batch in batches}
        self._sealed = [batch for batch in self._sealed if batch["key"] not in done]

    async def hand_over(self, *, agent: str, model: str, metadata: Mapping[str, Any]) -> None:
        """Write everything kept so far with the run's row naming its new agent (a handoff)."""
        update = RunUpdate(
            state=self._state, usage=self.usage, agent=agent, model=model, metadata=metadata
        )
        await self.flush(update)

    async def flush(self, update: RunUpdate | None = None) -> None:
        """Write everything kept so far now, with `update` to the run's row."""
        self.seal(update)
        batches = list(self._sealed)
        if batches:
            await self._flush(batches)
            self.written(batches)


def _waiting(payload: RunWaiting) -> Mapping[str, Any]:
    """The `detail` a run's row shows while it waits (as the embedded sink writes it)."""
    if payload.reason == "approval":
        return {"detail": f"waiting for approval of call {payload.call_id}"}
    reason = payload.reason
    return {"detail": reason if reason.startswith("waiting") else f"waiting for a {reason}"}
