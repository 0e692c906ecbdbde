"""`RunExecutor`: claims runs from the store, executes them, keeps their leases, obeys controls.

Three background tasks: the pump claims runs when there is room (pending runs of known
agents, and runs whose owner's lease expired), a batch per statement; the renewer keeps
this process's leases alive; the control reader delivers pause, cancel, approve and deny
requests that any process sent through the store: at once when the store announces them
(PostgreSQL's LISTEN/NOTIFY), otherwise at the next poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
import math
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

from harness.agent.loop import AgentLoop
from harness.core.events import (
    ApprovalDecided,
    ApprovalRequested,
    ContextCompacted,
    RunCancelled,
    RunEvent,
    RunFailed,
    RunPaused,
    RunRecovered,
    RunResumed,
    RunStarted,
)
from harness.core.messages import Message
from harness.core.results import RunResult
from harness.core.states import RunState
from harness.errors import RunInterrupted, StoreConflict, StoreError
from harness.memory import ContextState
from harness.runtime._catalog import AgentCatalog
from harness.runtime._handoffs import RunHandoffs
from harness.runtime.bus import EventBus
from harness.runtime.inbox import RunMailbox
from harness.runtime.resources import AgentResources
from harness.runtime.results import StoredResults
from harness.runtime.runs import RunHandle, result_data
from harness.runtime.sink import StoreSink
from harness.store.protocol import (
    Control,
    EventStore,
    NewEvent,
    RunRecord,
    RunUpdate,
    StepWrite,
)
from harness.tools import ApprovalDecision, ApprovalHandler, AuditLog, ChildRuns

__all__ = ["ChildRunsFactory", "RunExecutor"]

ChildRunsFactory = Callable[[RunRecord, StoreSink, RunHandle], ChildRuns]
"""Makes the `ToolContext.children` of a run about to execute (`runtime/children.py`)."""

_log = logging.getLogger(__name__)
_POLL_S = 0.2
_LATE_S = 0.002
"""How long after a lease runs out the look for it comes (clocks of two processes)."""


class RunExecutor:
    """Executes runs of the store in this process. See the module docstring."""

    def __init__(
        self,
        store: EventStore,
        bus: EventBus,
        resources: AgentResources,
        *,
        owner: str,
        agents: AgentCatalog,
        approver: ApprovalHandler | None,
        audit: AuditLog | None,
        max_concurrent: int,
        model_limits: Mapping[str, int],
        lease_s: float,
        adopt: bool = True,
        control_poll_s: float = _POLL_S,
        on_start: Callable[[RunRecord], None] | None = None,
        live_steps: bool = False,
        children: ChildRunsFactory | None = None,
    ) -> None:
        self._store, self._bus, self._resources = store, bus, resources
        self._owner, self._agents = owner, agents
        self._approver, self._audit = approver, audit
        self._max, self._model_limits, self._lease_s = max_concurrent, model_limits, lease_s
        self._handles: dict[str, RunHandle] = {}
        self._waiters: dict[str, tuple[asyncio.Future[RunResult | None], ...]] = {}
        """The futures of those who wait here for a run's result (`result_of`), by run (a
        tuple: most runs have one waiter)."""
        self._early: dict[str, list[Control]] = {}
        self._models: dict[str, str] = {}
        self._running: Counter[str] = Counter()
        """Runs executing here, by model."""
        self._mixed = False
        """The queue held runs this process cannot take at the last claim."""
        self._expired_checked = -_POLL_S
        """When expired leases were last looked for (`time.monotonic()`)."""
        self._expiry_due = math.inf
        """When the next lease of another owner runs out (`time.monotonic()`), as last read."""
        self._looked = False
        """Whether expired leases were looked for yet."""
        self._found: list[str] = []
        """Runs with an expired lease that the last look found, for the next claim."""
        self._reserved: list[str] = []
        """Models of runs being created to start here at once (see `reserve`)."""
        self._claiming = 0
        """Slots held by the claim in flight (see `_claim`)."""
        self._parked: set[str] = set()
        """Runs here whose slot is given up: a tool call of theirs is parked
        (`ToolContext.park`), or it ended and they wait in `_woken` for a slot."""
        self._woken: deque[tuple[str, asyncio.Future[None]]] = deque()
        """Parked runs whose wait ended, oldest first: they get the next free slots, before
        any new run is claimed or started."""
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.streaming: Counter[str] = Counter()
        """Agents whose runs stream their model's text (`Harness.run(stream=True)`)."""
        self.watched: Counter[str] = Counter()
        """Agents whose runs someone follows live (`Harness.run(on_event=...)`): their
        steps commit before each model call, so the follower sees them start."""
        self.live_steps = live_steps
        """Every run executed here commits before each model call, as if watched."""
        self.own: set[str] = set()
        """Runs submitted through this process's `Harness`."""
        self._adopt = adopt
        self._control_poll_s = control_poll_s
        self._on_start = on_start
        self._children = children

    @property
    def running(self) -> int:
        """Runs executing in this process now."""
        return len(self._handles)

    def start(self) -> None:
        """Start claiming and executing runs (and raise the collector's young threshold)."""
        raise_young_threshold()
        self._tasks = [
            asyncio.create_task(job()) for job in (self._pump, self._renew, self._read_controls)
        ]

    def wake(self) -> None:
        """Look for runs to claim now rather than at the next poll."""
        self._wake.set()

    async def stop(self) -> None:
        """Stop at once: runs in flight stay as committed; their leases are released."""
        for task in self._tasks:
            task.cancel()
        running = [h.task for h in self._handles.values() if h.task is not None]
        for task in running:
            task.cancel()
        await asyncio.gather(*self._tasks, *running, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self._store.release(self._owner)

    async def _pump(self) -> None:
        while True:
            self._wake.clear()
            try:
                await self._claim()
            except Exception:
                _log.exception("claiming runs failed; trying again")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._until_next_look()):
                    await self._wake.wait()

    def _until_next_look(self) -> float:
        """Seconds until the next poll, or sooner when another owner's lease runs out then.

        A lease due already (no slot was free to take its run) waits for the poll.
        """
        left = self._expiry_due - time.monotonic()
        return left if 0 < left < _POLL_S else _POLL_S

    async def _claim(self) -> None:
        """Claim as many runs as there is room for, in one statement per kind, and start them.

        The free slots are held while the claim and its reads are in flight, so that a
        submit meanwhile (`reserve`) does not take one of them too; once the claimed runs
        this process can take are known, those runs hold their slots instead. Queued runs
        that never ran move to RUNNING in one write for the batch (`start_runs`), once
        the batch's messages are read.
        """
        free = self._max - len(self._handles) + len(self._parked) - len(self._reserved)
        free -= len(self._woken)
        if free <= 0:
            return
        self._claiming = free
        try:
            claimed = await self._claim_free(free)
        finally:
            self._claiming = 0
            if self._woken:
                self._grant()
        taken, refused = self._take(claimed)
        try:
            history, messages, mail = await self._histories(taken)
            # Only once they can start: a run moved to RUNNING and left would wait for its
            # lease to run out, and then be taken over as if its owner had died.
            fresh = [r.run_id for r in taken if _never_ran(r)]
            started = await self._store.start_runs(self._owner, fresh) if fresh else []
        finally:
            for record in taken:
                self._reserved.remove(record.model or "")
        moved = set(started)
        for record in taken:
            run_id = record.run_id
            if run_id in self._handles:
                continue
            if not _never_ran(record):
                events = history.get(run_id, [])
                self._start_task(record, messages[run_id], events=events, mail=run_id in mail)
            elif run_id in moved:
                self._start_task(record, messages[run_id])
            else:  # cancelled or taken since its claim
                refused.append(run_id)
        if refused:
            await self._store.release(self._owner, refused)
        if self._adopt:
            await self._look_after_claim()

    def _take(self, claimed: list[RunRecord]) -> tuple[list[RunRecord], list[str]]:
        """The claimed runs this process can take, and the ids of the others.

        Each run taken holds a slot and its model's room (`_reserved`) until it starts.
        """
        taken: list[RunRecord] = []
        refused: list[str] = []
        for record in claimed:
            if record.run_id in self._handles:
                continue
            if self._fits(record):
                self._reserved.append(record.model or "")
                taken.append(record)
            else:
                refused.append(record.run_id)
        return taken, refused

    async def _claim_free(self, free: int) -> list[RunRecord]:
        """Up to `free` runs claimed, not started here yet."""
        if self._adopt:
            claimed = await self._claim_expired(free)
            claimed += await self._claim_pending(free - len(claimed))
        else:  # only our own runs that wait for room: the claim checks their state
            wanted = [run_id for run_id in self.own if run_id not in self._handles]
            claimed = await self._claim_ids(wanted, free)
        return [r for r in claimed if r.run_id not in self._handles]

    async def _claim_expired(self, free: int) -> list[RunRecord]:
        """Runs whose owner died: those the last look found, or looked for now.

        Leases expire with time, not on a wake: a run finishing here says nothing new. The
        look is made here, before the queue is claimed, at the first claim (a restarted
        process resumes its own runs first) and once the next lease of another owner ran
        out (a process on standby takes over its runs then, not up to a poll later);
        otherwise once per poll at the end of a claim (`_look_after_claim`), and what it
        found is claimed here by the next claim, still before the queue.
        """
        if free <= 0:
            return []
        if not self._looked or time.monotonic() >= self._expiry_due:
            await self._look_for_expired()
        found, self._found = self._found, []
        return await self._claim_ids(found, free)

    async def _look_after_claim(self) -> None:
        """Look for expired leases once per poll, while the runs just claimed execute.

        Made at the start of a claim, the look's reads (in reader threads) left the loop
        idle whenever no run was executing, as when a batch of runs has just finished.
        """
        if time.monotonic() < self._expired_checked + _POLL_S:
            return
        await self._look_for_expired()
        if self._found:
            self.wake()

    async def _look_for_expired(self) -> None:
        """Read which runs' leases expired and when the next one of another owner runs out."""
        now = time.monotonic()
        self._looked, self._expired_checked = True, now
        expired, next_in = await asyncio.gather(
            self._store.expired_runs(), self._store.lease_expires_in(self._owner)
        )
        self._expiry_due = math.inf if next_in is None else now + next_in + _LATE_S
        self._found = [r.run_id for r in expired if self._runnable(r)]

    async def _claim_pending(self, free: int) -> list[RunRecord]:
        """The first queued runs, by priority then age, in one statement.

        When the queue holds runs this process cannot take (an agent it does not know, a
        model at its limit), those come back first every time: then the claim is limited
        to the runs it can take, among the newest queued, until the queue is clear again.
        """
        if free <= 0:
            return []
        if not self._mixed:
            claimed = await self._store.claim(
                self._owner, lease_s=self._lease_s, states=(RunState.PENDING,), limit=free
            )
            self._mixed = any(r.run_id not in self._handles and not self._fits(r) for r in claimed)
            return claimed
        candidates = await self._store.list_runs(state=RunState.PENDING, limit=10 * self._max)
        wanted = [r.run_id for r in candidates if self._runnable(r)]
        self._mixed = len(wanted) < len(candidates)
        return await self._claim_ids(wanted, free)

    async def _claim_ids(self, wanted: list[str], free: int) -> list[RunRecord]:
        if not wanted:
            return []
        return await self._store.claim(
            self._owner, lease_s=self._lease_s, run_ids=wanted, limit=free
        )

    async def _histories(
        self, records: list[RunRecord]
    ) -> tuple[dict[str, list[RunEvent]], dict[str, list[Message]], set[str]]:
        """The claimed runs' messages, and the events of those that ran before, by run.

        Also which of those that ran before have mail: a `mail` control may have gone to
        their previous owner, and only those read their inbox when they start. Three
        batched reads, at the same time, however many runs were claimed.
        """
        if not records:
            return {}, {}, set()
        ran = [r.run_id for r in records if not _never_ran(r)]
        events, messages, mail = await asyncio.gather(
            self._store.events_of_runs(ran) if ran else _no_events(),
            self._store.messages_of_runs([r.run_id for r in records]),
            self._store.runs_with_mail(ran),
        )
        by_run: dict[str, list[RunEvent]] = {}
        for event in events:
            by_run.setdefault(event.run_id, []).append(event)
        return by_run, messages, mail

    def reserve(self, model: str | None) -> bool:
        """Hold a slot for a run of `model` about to be created leased to this process.

        Taken at once (no await between the check and the hold), so that a burst of
        submits cannot all see room. `False` when there is none; otherwise `launch` or
        `unreserve` gives the slot back.
        """
        busy = len(self._handles) - len(self._parked) + len(self._reserved) + self._claiming
        if busy + len(self._woken) >= self._max:
            return False
        if not self._model_has_room(model):
            return False
        self._reserved.append(model or "")
        return True

    def unreserve(self, model: str | None) -> None:
        """Give back a slot held by `reserve` for a run that was not created."""
        self._reserved.remove(model or "")

    def launch(self, record: RunRecord, messages: list[Message]) -> None:
        """Start a run created leased to this process, in the slot `reserve` held."""
        self.unreserve(record.model)
        if record.run_id not in self._handles:
            self._start_task(record, messages)

    def result_of(self, run_id: str) -> asyncio.Future[RunResult | None] | None:
        """A future of the caller's own for the result of a run executing here.

        It is done when the run ends here (`None` in it, or `None` returned: ask the
        store). Cancelling it gives up this wait alone; `forget` it when done with it.
        """
        if run_id not in self._handles:
            return None
        waiter = asyncio.get_running_loop().create_future()
        self._waiters[run_id] = (*self._waiters.get(run_id, ()), waiter)
        return waiter

    def forget(self, run_id: str, waiter: asyncio.Future[RunResult | None]) -> None:
        """Drop a future of `result_of` nobody awaits any more (a no-op once the run ended)."""
        waiters = self._waiters.get(run_id, ())
        if waiter in waiters:
            self._waiters[run_id] = tuple(w for w in waiters if w is not waiter)

    def _start_task(
        self,
        record: RunRecord,
        messages: list[Message],
        *,
        events: list[RunEvent] | None = None,
        mail: bool = False,
    ) -> None:
        """Execute `record` from its `messages`.

        `events` is `None` for a run RUNNING here already that never ran (created RUNNING
        by a submit here, or a queued run moved to RUNNING with its claimed batch), and
        the events of a claimed run otherwise; `mail` says its inbox holds a message.
        """
        if self._on_start is not None:
            self._on_start(record)
        handle = RunHandle(run_id=record.run_id)
        self._handles[record.run_id] = handle
        model = record.model or ""
        self._models[record.run_id] = model
        self._running[model] += 1
        if events and mail:  # it ran before: the `mail` control may have gone to its last owner
            handle.mail = True
        handle.task = asyncio.create_task(self._execute(record, handle, messages, events))
        for control in self._early.pop(record.run_id, ()):
            self._obey(control)

    def _busy(self) -> int:
        """Slots taken: runs executing here (not parked), being created, being claimed."""
        return len(self._handles) - len(self._parked) + len(self._reserved) + self._claiming

    def give_up(self, run_id: str) -> None:
        """A run of this process waits (a parked call): its slot goes to another run."""
        if run_id not in self._handles or run_id in self._parked:
            return
        self._parked.add(run_id)
        self._running[self._models.get(run_id, "")] -= 1
        self._grant()
        self.wake()

    async def take_back(self, run_id: str) -> None:
        """Wait until the parked run `run_id` has a slot again (woken runs first, in order)."""
        if run_id not in self._parked:
            return
        granted = asyncio.get_running_loop().create_future()
        entry = (run_id, granted)
        self._woken.append(entry)
        self._grant()
        try:
            await granted
        except asyncio.CancelledError:
            with contextlib.suppress(ValueError):
                self._woken.remove(entry)
            raise

    def _grant(self) -> None:
        """Give free slots to woken runs, oldest first (a run whose model is full waits)."""
        while self._woken and self._busy() < self._max:
            entry = next(
                (e for e in self._woken if self._model_has_room(self._models.get(e[0]))), None
            )
            if entry is None:
                return
            self._woken.remove(entry)
            run_id, granted = entry
            if run_id in self._parked:
                self._parked.discard(run_id)
                self._running[self._models.get(run_id, "")] += 1
            if not granted.done():
                granted.set_result(None)

    def _runnable(self, record: RunRecord) -> bool:
        if not self._adopt and record.run_id not in self.own:
            return False
        return record.run_id not in self._handles and self._fits(record)

    def _fits(self, record: RunRecord) -> bool:
        """Whether this process knows the run's agent and its model has room."""
        return self._agents.known(record) and self._model_has_room(record.model)

    def _model_has_room(self, model: str | None) -> bool:
        limit = self._model_limits.get(model or "")
        if limit is None:
            return True
        return self._running[model or ""] + self._reserved.count(model or "") < limit

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self._lease_s / 3)
            held = set(self._handles)
            if not held:
                continue
            try:
                kept = set(await self._store.renew(self._owner, held, lease_s=self._lease_s))
            except Exception:
                _log.exception("renewing leases failed; trying again")
                continue
            for run_id in held - kept:  # another process took it over: stop, quietly
                handle = self._handles.get(run_id)
                if handle is not None and handle.task is not None:
                    handle.task.cancel()

    async def _read_controls(self) -> None:
        """Take this owner's controls when the store announces some, and every poll.

        PostgreSQL announces them with NOTIFY; on SQLite the poll is the only way.
        """
        seen = 0
        while True:
            try:
                controls = await self._store.take_controls(owner=self._owner)
            except Exception:
                _log.exception("reading controls failed; trying again")
                controls = []
            for control in controls:
                self._obey(control)
            seen = await self._store.wait_for_notice("controls", seen, self._control_poll_s)

    def _obey(self, control: Control) -> None:
        handle = self._handles.get(control.run_id)
        if handle is None:  # claimed but not started yet: apply it when it starts
            self._early.setdefault(control.run_id, []).append(control)
            return
        payload = control.payload
        if control.kind == "mail":
            handle.note_mail()
        elif control.kind == "pause":
            handle.pause()
        elif control.kind == "cancel":
            handle.cancelled_by = str(payload.get("by") or "unknown")
            handle.cancel_reason = payload.get("reason")
            if handle.task is not None:
                handle.task.cancel()
        elif control.kind in ("approve", "deny"):
            decision = ApprovalDecision(
                approved=control.kind == "approve",
                by=str(payload.get("by") or "unknown"),
                reason=payload.get("reason"),
            )
            handle.decide(str(payload.get("call_id")), decision)

    async def _execute(
        self,
        record: RunRecord,
        handle: RunHandle,
        messages: list[Message],
        events: list[RunEvent] | None,
    ) -> None:
        result: RunResult | None = None
        try:
            result = await self._execute_claimed(record, handle, messages, events)
        except asyncio.CancelledError:
            if handle.cancelled_by is not None:  # a cancel that landed outside the loop
                await self._end(
                    record.run_id,
                    _cancelled_event(handle),
                    RunState.CANCELLED,
                    RunUpdate(termination="cancelled", error=handle.cancel_reason),
                )
            # otherwise shutdown or a lost lease: the store keeps the last committed step
        except StoreConflict:  # no longer ours to write (a lost lease): its new owner goes on
            _log.warning("run %s stopped: another process holds it now", record.run_id)
        except StoreError as exc:  # nothing more can be recorded: leave the run to recover
            if not self._tell_waiter(record.run_id, _unrecorded(record.run_id, exc)):
                _log.exception("run %s stopped: the store failed", record.run_id)
        except Exception as exc:
            _log.exception("run %s could not be executed", record.run_id)
            error = f"{type(exc).__name__}: {exc}"
            event = NewEvent(
                payload=RunFailed(
                    error=str(exc), error_type=type(exc).__name__, termination="error"
                )
            )
            await self._end(
                record.run_id, event, RunState.FAILED, RunUpdate(termination="error", error=error)
            )
        finally:
            self._handles.pop(record.run_id, None)
            model = self._models.pop(record.run_id, None)
            if record.run_id in self._parked:
                self._parked.discard(record.run_id)  # its model's count was given up already
            elif model is not None:
                self._running[model] -= 1
            self.own.discard(record.run_id)
            self._answer_waiters(record.run_id, result)
            if result is None:  # a finished run needs no lease; any other is handed back
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._store.release(self._owner, [record.run_id]))
            if self._woken:
                self._grant()  # room for a woken run first,
            self.wake()  # then for one that waits in the queue

    def _answer_waiters(self, run_id: str, result: RunResult | None) -> None:
        """Give the run's waiters here its result (`None`: it did not end here)."""
        for waiter in self._waiters.pop(run_id, ()):
            if not waiter.done():
                waiter.set_result(result)

    def _tell_waiter(self, run_id: str, error: StoreError) -> bool:
        """Fail the local waits for the run's result with `error`; `False` if none waits."""
        told = False
        for waiter in self._waiters.pop(run_id, ()):
            if not waiter.done():
                waiter.set_exception(error)
                told = True
        return told

    async def _execute_claimed(
        self,
        record: RunRecord,
        handle: RunHandle,
        messages: list[Message],
        events: list[RunEvent] | None,
    ) -> RunResult | None:
        run_id = record.run_id
        agent = self._agents.for_run(record)
        assert agent is not None  # `_runnable` checked
        # A run launched by our own submit (no events) was created RUNNING; a claimed one
        # is moved there.
        started = () if events is None else await self._start(record)
        if started is None:
            return None
        self._publish(started)
        sink = StoreSink(
            self._store,
            self._bus,
            run_id,
            owner=self._owner,
            pause_requested=handle.pausing,
            usage=record.usage,
            watched=self.live_steps or self.watched[agent.name] > 0,
            children_usage=record.children_usage,
        )
        loop = AgentLoop(
            agent,
            model=self._resources.model(agent),
            toolset=await self._resources.toolset(agent),
            sink=sink,
            stream=self.streaming[agent.name] > 0,
            approver=self._approver or handle.wait_for_decision,
            audit=self._audit or sink,
            results=StoredResults(self._store, sink),
            handoffs=RunHandoffs(self._agents, self._resources, sink, record.metadata)
            if agent.handoffs
            else None,
            children=self._children(record, sink, handle) if self._children else None,
            slot=_Slot(self, run_id, handle),
            mailbox=RunMailbox(self._store, sink, run_id, agent=agent.name, handle=handle),
        )
        left = left_off(events or ())
        if left.not_started:
            await self._redeliver(run_id, handle, left.not_started)
        try:
            result = await loop.run(
                run_id,
                messages,
                not_started=left.not_started,
                usage=record.usage,
                context=left.context,
                elapsed_s=left.elapsed_s,
                task_type=record.task_type,
                variant=(record.experiment, record.variant)
                if record.experiment and record.variant
                else None,
            )
        except RunInterrupted:
            sink.emit(RunPaused(at=handle.paused_at))
            await sink.flush(RunUpdate(state=RunState.PAUSED, usage=sink.usage))
            return None
        except asyncio.CancelledError:
            if handle.cancelled_by is None:
                raise
            await self._cancelled(sink, handle)
            return None
        await sink.flush(RunUpdate.finished(result, result_data(result, loop.spec)))
        return result

    async def _start(self, record: RunRecord) -> list[RunEvent] | None:
        """Move the run to RUNNING; a run taken over from a dead owner says so."""
        if record.state == RunState.PENDING:
            return await self._store.transition(record.run_id, [RunState.PENDING], RunState.RUNNING)
        event = NewEvent(
            payload=RunRecovered(
                previous_owner=record.previous_owner, state=record.state, owner=self._owner
            )
        )
        return await self._store.append(
            StepWrite(
                run_id=record.run_id,
                events=[event],
                update=RunUpdate(state=RunState.RUNNING),
                expect_states=[RunState.RUNNING, RunState.WAITING_TOOL],
                owner=self._owner,
            )
        )

    async def _redeliver(self, run_id: str, handle: RunHandle, asked: frozenset[str]) -> None:
        """Hand the run the decisions already recorded for calls it asks about again.

        A previous owner may have taken a decision's control and died before the run
        committed it: the store's decision, not the consumed control, is the truth.
        """
        for decision in await self._store.decisions(run_id):
            if decision.call_id in asked:
                handle.decide(
                    decision.call_id,
                    ApprovalDecision(
                        approved=decision.approved, by=decision.by, reason=decision.reason
                    ),
                )

    async def _end(self, run_id: str, event: NewEvent, state: str, update: RunUpdate) -> None:
        """End a run outside the loop — only while it is still ours (a fenced write)."""
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        step = StepWrite(
            run_id=run_id,
            events=[event],
            owner=self._owner,
            # `{}`: no longer the detail of what it waited for, if it waited
            update=dataclasses.replace(update, state=state, result_data=update.result_data or {}),
            expect_states=[RunState.PENDING, RunState.RUNNING, RunState.WAITING_TOOL],
        )
        with contextlib.suppress(Exception):  # not ours any more, or the store is down
            self._publish(await self._store.append(step))

    async def _cancelled(self, sink: StoreSink, handle: RunHandle) -> None:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        sink.emit(_cancelled_event(handle).payload)
        await sink.flush(
            RunUpdate(
                state=RunState.CANCELLED,
                termination="cancelled",
                usage=sink.usage,
                error=handle.cancel_reason,
            )
        )

    def _publish(self, events: Sequence[RunEvent]) -> None:
        for event in events:
            self._bus.publish(event)


T = TypeVar("T")

_DEFAULT_THRESHOLDS: Final = (700, 10, 10)
"""CPython's collector thresholds, unless someone set others."""

YOUNG_THRESHOLD: Final = 10_000
"""Allocations between two young collections while runs execute here."""


def raise_young_threshold() -> None:
    """Collect the young generation every 10,000 allocations instead of every 700.

    Process-wide, and only while the thresholds are still CPython's defaults: a process
    that chose its own keeps them (set yours after `Harness.open` to override this). Runs
    in flight keep many young objects alive, which every young collection walks again: in
    a burst of 1,000 runs the collector's share of CPU goes from about 14 % to 3 %.
    """
    if gc.get_threshold() == _DEFAULT_THRESHOLDS:
        gc.set_threshold(YOUNG_THRESHOLD, *_DEFAULT_THRESHOLDS[1:])


class _Slot:
    """The `WorkerSlot` of one run: its executor's slot, and its handle's pauses."""

    __slots__ = ("_executor", "_handle", "_run_id")

    def __init__(self, executor: RunExecutor, run_id: str, handle: RunHandle) -> None:
        self._executor, self._run_id, self._handle = executor, run_id, handle

    def give_up(self) -> None:
        """Let another run have the slot while this one waits."""
        self._executor.give_up(self._run_id)

    async def take_back(self) -> None:
        """Wait for a slot again."""
        await self._executor.take_back(self._run_id)

    async def hold(self, until: Awaitable[T]) -> T:
        """Await `until` unless a pause comes first (`RunInterrupted`)."""
        return await self._handle.hold(until)


async def _no_events() -> list[RunEvent]:
    return []


def _never_ran(record: RunRecord) -> bool:
    """Whether a claimed run is queued and never ran: no events but `run_submitted`."""
    return record.state == RunState.PENDING and record.last_seq <= 1


def _unrecorded(run_id: str, exc: StoreError) -> StoreError:
    return StoreError(
        f"{exc.message}; run {run_id} stopped at its last committed step and is left for "
        "`harness worker` to take over once the store can be written again",
        retryable=exc.retryable,
    )


def left_off(events: Sequence[RunEvent]) -> LeftOff:
    """Where a resumed run left off, from the events it had when it was claimed."""
    if not events:
        return _FRESH
    asked: set[str] = set()
    context: ContextState | None = None
    segments = _Segments()
    for event in events:
        match event.payload:
            case ApprovalRequested(call_id=call_id):
                asked.add(call_id)
            case ApprovalDecided(call_id=call_id):
                asked.discard(call_id)
            case ContextCompacted(state=state) as compacted if state is not None:
                context = ContextState.from_event(compacted)
            case _:
                pass
        segments.see(event)
    return LeftOff(not_started=frozenset(asked), context=context, elapsed_s=segments.total())


@dataclass(frozen=True, kw_only=True, slots=True)
class LeftOff:
    """Where a resumed run left off."""

    not_started: frozenset[str] = frozenset()
    """Calls that were waiting for a decision when it stopped (they never ran)."""
    context: ContextState | None = None
    """The state of its last context compaction, if any."""
    elapsed_s: float = 0.0
    """The time it executed before, counted against `Limits.max_seconds`."""


_FRESH: Final = LeftOff()
"""Where a run that never started stands: shared, nothing to keep per run."""


class _Segments:
    """Adds up the time a run executed, from its events, leaving out the time between.

    A segment starts with `run_started` and lasts until the last event before the next
    `run_started`, `run_resumed` (after a pause) or `run_recovered` (after its owner
    stopped): time paused, queued, or waiting for a takeover does not count.
    """

    def __init__(self) -> None:
        self._total = 0.0
        self._start: float | None = None
        self._last = 0.0

    def see(self, event: RunEvent) -> None:
        """Take the next event of the run, in order."""
        if isinstance(event.payload, RunStarted | RunResumed | RunRecovered):
            self._close()
            self._start = event.ts if isinstance(event.payload, RunStarted) else None
        self._last = event.ts

    def total(self) -> float:
        """Seconds executed in the segments seen so far."""
        self._close()
        return self._total

    def _close(self) -> None:
        if self._start is not None:
            self._total += max(0.0, self._last - self._start)
            self._start = None


def _cancelled_event(handle: RunHandle) -> NewEvent:
    return NewEvent(payload=RunCancelled(by=handle.cancelled_by, reason=handle.cancel_reason))
