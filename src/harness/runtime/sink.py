"""`StoreSink`: the `RunSink` of a durable run — events published as they commit."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import fields
from operator import attrgetter
from typing import Any

from harness.core.events import (
    EVENT_CLASSES,
    ApprovalDecided,
    ContextCompacted,
    EventPayload,
    ModelDelta,
    ModelResponded,
    RunCancelled,
    RunEvent,
    RunFailed,
    RunFinished,
    RunWaiting,
    WaitEnded,
)
from harness.core.messages import Message
from harness.core.states import RunState
from harness.core.usage import Usage
from harness.errors import RunInterrupted
from harness.runtime.bus import EventBus
from harness.store.protocol import EventStore, NewEvent, RunUpdate, StepWrite
from harness.tools.audit import AuditRecord

__all__ = ["LIVE_ONLY", "StoreSink"]

LIVE_ONLY: tuple[type[EventPayload], ...] = (ModelDelta,)
"""Events published to subscribers but not stored (seq 0): the final message holds the
same text."""

_AUDIT_KEYS: tuple[str, ...] = tuple(f.name for f in fields(AuditRecord))
_audit_values = attrgetter(*_AUDIT_KEYS)
"""An audit record's values, in the order of `AuditRecord.to_json` (whose keys are its fields),
read in one call: the same dict as parsing that JSON, without writing and parsing it."""

_PAID_FOR: tuple[type[EventPayload], ...] = (ModelResponded, ContextCompacted)
"""Events of a model call (a summary is paid for too): the next model call waits for them
to commit."""

_ENDS: tuple[type[EventPayload], ...] = (RunFinished, RunFailed, RunCancelled)
"""The events that end a run."""

_STATE_AFTER: Mapping[type[EventPayload], str] = {
    RunWaiting: RunState.WAITING_TOOL,
    ApprovalDecided: RunState.RUNNING,
    WaitEnded: RunState.RUNNING,  # once no other call waits (`waiting` is 0)
}


_PLAIN_EVENTS: frozenset[type[EventPayload]] = frozenset(
    cls
    for cls in EVENT_CLASSES.values()
    if not issubclass(cls, (*LIVE_ONLY, *_PAID_FOR, *_ENDS, *_STATE_AFTER))
)
"""Event classes that `emit` only keeps: not live-only, and no state, detail or reply to
note. Looked up by class, one set lookup per event rather than four checks."""


class StoreSink:
    """Commits events and messages at each checkpoint, then publishes the events committed.

    Subscribers see an event only once it is stored, with the number the store gave it: a
    write that fails (a full disk, a lost lease) publishes nothing, so no one is shown an
    event that a later commit could number differently. Live-only events (`model_delta`)
    are published at once, with seq 0.

    Args:
        store: Where the run lives.
        bus: Where live events go.
        run_id: The run.
        owner: The lease holder; a step commits only while the lease is still ours.
        pause_requested: Asked at each checkpoint; when true the run stops there.
        usage: What the run consumed before (a resumed run); the loop reports the total
            as it grows (`report_usage`), and it commits with the next step.
        children_usage: What its child runs consumed before (a resumed run); the runtime
            reports the total as children end (`report_children_usage`).
        watched: Someone follows the run live (`harness run`): `announce` commits, so they
            see a step start before its model call returns.
    """

    __slots__ = (
        "_audit",
        "_blobs",
        "_bus",
        "_children_changed",
        "_delivered",
        "_detail",
        "_events",
        "_messages",
        "_owner",
        "_pause_requested",
        "_state",
        "_store",
        "_unsaved_reply",
        "_usage_changed",
        "_watched",
        "children_usage",
        "run_id",
        "usage",
    )

    def __init__(
        self,
        store: EventStore,
        bus: EventBus,
        run_id: str,
        *,
        owner: str,
        pause_requested: Callable[[], bool],
        usage: Usage | None = None,
        watched: bool = False,
        children_usage: Usage | None = None,
    ) -> None:
        self._store, self._bus, self.run_id, self._owner = store, bus, run_id, owner
        self._events: list[NewEvent] = []
        self._messages: list[Message] = []
        self._audit: list[AuditRecord] = []
        self._blobs: dict[str, str] | None = None
        """Full texts of cut tool results for the next commit; made by the first."""
        self._delivered: list[int] | None = None
        """Inbox messages delivered with the next commit; made by the first."""
        self._state: str | None = None
        self._detail: Mapping[str, Any] | None = None
        """What the run waits for, for its row's `result_data` (`{}` once it waits no more)."""
        self._pause_requested = pause_requested
        self.usage = usage or Usage()
        self._usage_changed = False
        self.children_usage = children_usage or Usage()
        """What the run's children consumed, as their results came back (`RunRecord`'s)."""
        self._children_changed = False
        self._watched = watched
        self._unsaved_reply = False

    def emit(self, payload: EventPayload) -> None:
        """Keep one event for the next commit, or publish a live-only one now."""
        now = time.time()
        if payload.__class__ in _PLAIN_EVENTS:  # most events: kept, nothing more to note
            self._events.append(NewEvent(payload=payload, ts=now))
            return
        if isinstance(payload, LIVE_ONLY):
            self._bus.publish(RunEvent(run_id=self.run_id, seq=0, ts=now, payload=payload))
            return
        self._events.append(NewEvent(payload=payload, ts=now))
        state = _STATE_AFTER.get(type(payload))
        if state is not None and not (isinstance(payload, WaitEnded) and payload.waiting):
            self._state = state
            self._detail = _waiting(payload) if isinstance(payload, RunWaiting) else {}
        elif isinstance(payload, _ENDS):
            self._detail = {}  # a run ended while it waited says no more that it waits
        if isinstance(payload, _PAID_FOR):
            self._unsaved_reply = True

    def report_usage(self, total: Usage) -> None:
        """Keep the run's usage so far, as the loop counts it; it commits with the next step."""
        self.usage = total
        self._usage_changed = True

    def report_children_usage(self, total: Usage) -> None:
        """Keep the usage of the run's children so far; it commits with the next step."""
        self.children_usage = total
        self._children_changed = True

    def record(self, entry: AuditRecord) -> None:
        """Keep one audit record; it commits with the step (the sink is an `AuditLog`)."""
        self._audit.append(entry)

    def blob(self, key: str, text: str) -> None:
        """Keep one large text (a full tool result) for the next commit."""
        if self._blobs is None:
            self._blobs = {}
        self._blobs[key] = text

    def pending_blob(self, key: str) -> str | None:
        """A text kept by `blob` that has not been committed yet, or `None`."""
        return None if self._blobs is None else self._blobs.get(key)

    def message(self, message: Message) -> None:
        """Keep one message for the next commit."""
        self._messages.append(message)

    def deliver(self, message_id: int) -> None:
        """Mark a message of the run's inbox delivered with the next commit (read once)."""
        if self._delivered is None:
            self._delivered = []
        self._delivered.append(message_id)

    async def commit(self) -> None:
        """Commit what was recorded so far, in the middle of a step."""
        await self.flush()

    async def checkpoint(self) -> None:
        """Commit what the step did; stop here if a pause was asked for."""
        await self.flush()
        if self._pause_requested():
            raise RunInterrupted(f"run {self.run_id} paused at a step boundary")

    async def boundary(self) -> None:
        """Stop here if a pause was asked for (after committing); else commit later."""
        if self._pause_requested():
            await self.checkpoint()

    async def announce(self) -> None:
        """Commit before a model call when watched live or a reply is not durable yet."""
        if self._watched or self._unsaved_reply:
            await self.flush()

    async def hand_over(self, *, agent: str, model: str, metadata: Mapping[str, Any]) -> None:
        """Commit everything kept so far with the run's row naming its new agent (a handoff)."""
        update = RunUpdate(
            state=self._state, usage=self.usage, agent=agent, model=model, metadata=metadata
        )
        await self.flush(update)

    def _forget(
        self,
        events: tuple[NewEvent, ...],
        messages: tuple[Message, ...],
        audit: tuple[AuditRecord, ...],
        blobs: Mapping[str, str],
        delivered: tuple[int, ...],
    ) -> None:
        """Drop what a write took from the buffers (what came after it stays)."""
        del self._events[: len(events)], self._messages[: len(messages)], self._audit[: len(audit)]
        if self._delivered:
            del self._delivered[: len(delivered)]
        if self._blobs:
            for key in blobs:
                if self._blobs.get(key) is blobs[key]:
                    del self._blobs[key]

    async def flush(self, update: RunUpdate | None = None) -> None:
        """Commit everything kept so far, with `update` to the run's row."""
        kept = self._events or self._messages or self._audit or self._blobs or self._delivered
        if not (kept or update or self._state or self._children_changed):
            return
        if update is None and (self._state or self._usage_changed or self._children_changed):
            update = RunUpdate(state=self._state, usage=self.usage)
        if self._children_changed and update is not None and update.children_usage is None:
            update = dataclasses.replace(update, children_usage=self.children_usage)
        if self._detail is not None and update is not None and update.result_data is None:
            update = dataclasses.replace(update, result_data=self._detail)
        # Tuples: the store keeps its own copy of a step, and a tuple's copy is itself.
        events, messages, audit = tuple(self._events), tuple(self._messages), tuple(self._audit)
        blobs = dict(self._blobs) if self._blobs else {}
        delivered = tuple(self._delivered) if self._delivered else ()
        try:
            written = await self._store.append(
                StepWrite(
                    run_id=self.run_id,
                    events=events,
                    messages=messages,
                    audit=[_audit_row(entry) for entry in audit],
                    blobs=blobs,
                    update=update,
                    owner=self._owner,
                    delivered=delivered,
                )
            )
        except asyncio.CancelledError:
            # The store's batches refuse a cancel: one that reached this task while its
            # write was in flight arrives once that write is done. What it held is the
            # store's now, and the run's last flush (its cancellation) must not write it
            # again.
            self._forget(events, messages, audit, blobs, delivered)
            raise
        # Cleared only once committed: a failed write keeps the step for the next try.
        self._forget(events, messages, audit, blobs, delivered)
        self._state = None
        self._detail = None
        self._usage_changed = False
        self._children_changed = False
        self._unsaved_reply = False
        # As the store numbered them (never an event that may be lost), together: a
        # subscriber that takes a batch is called once for the step.
        self._bus.publish_batch(written)


def _audit_row(entry: AuditRecord) -> dict[str, Any]:
    """The record as the store keeps it: its fields, all plain JSON values."""
    return dict(zip(_AUDIT_KEYS, _audit_values(entry), strict=True))


def _waiting(payload: RunWaiting) -> Mapping[str, Any]:
    """The `detail` a run's row shows while it waits (`harness runs show`, the API)."""
    if payload.reason == "approval":
        return {"detail": f"waiting for approval of call {payload.call_id}"}
    reason = payload.reason
    return {"detail": reason if reason.startswith("waiting") else f"waiting for a {reason}"}
