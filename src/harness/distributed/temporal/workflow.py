"""`RunWorkflow` (`harness.run`): one harness run, the agent loop inside a Temporal workflow.

The loop (`AgentLoop`: strategy, stop conditions, window manager, approval policy) runs in
workflow code, as it does embedded, handed proxies for what does I/O: its model's calls
run the `harness.model_call` activity, its tool calls `harness.tool_call`, and its events
and messages are written by activities (`WorkflowSink`). The workflow's own clock times
the run (`Limits.max_seconds`). Workflow id = run id.

Controls: signals `pause`, `resume` and `cancelling` (who cancels and why, sent just before
the workflow's cancellation), update `decide` (approve or deny a call), query `state`.

A long run's history is renewed: at the first step boundary after it holds
`history_events` events (`[runtime] temporal_history_events`), or once the server suggests
it, the workflow writes what the step did and continues as new with the same workflow id;
the new execution loads the run from the store, as a resume does. It waits while a child
run, an approval or a pause is in flight, and carries the mail flag it was signalled.

The workflow is not sandboxed: agents and their tools live in the worker's memory (found
through the task queue's `WorkerHost`), and the loop is deterministic given what the
activities returned; a replay test guards that.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Final

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    TimeoutError,
    TimeoutType,
)

from harness.agent.handoff import Seat
from harness.agent.loop import UNKNOWN_OUTCOME, AgentLoop
from harness.agent.spec import AgentSpec
from harness.agent.verify import DEFAULT_TIMEOUT_S, ShellVerifier, VerifyContext, VerifyResult
from harness.core.codec import message_from_dict, message_to_dict, usage_from_dict
from harness.core.events import RunCancelled, RunFailed, RunPaused, RunRecovered, RunResumed
from harness.core.messages import Message, ToolCall
from harness.core.results import RunResult
from harness.core.states import TEMPORAL_OWNER, RunState
from harness.core.usage import Limits
from harness.distributed.host import AgentKey, LoadedRun, ModelCallPolicy, WorkerHost
from harness.errors import ModelError, RunInterrupted
from harness.gateway.model import Model, ModelRequest, ModelResponse, ResponseDone, StreamEvent
from harness.memory import ContextState
from harness.store.protocol import RunUpdate
from harness.tools.approvals import ApprovalDecision, ApprovalRequest
from harness.tools.context import ToolContext
from harness.tools.toolset import ToolOutcome, Toolset

from ._children import WorkflowChildren
from ._handoffs import WorkflowSwitch
from ._hosts import host_of
from ._inbox import WorkflowMailbox
from ._local import store_call
from ._sink import WorkflowSink
from ._wire import (
    event_to_dict,
    notice_from_dict,
    request_to_dict,
    response_from_dict,
    runs_in_workflow,
    tool_from_dict,
    update_to_dict,
)

__all__ = ["WORKFLOW", "RunWorkflow"]

WORKFLOW: Final = "harness.run"
DEFAULT_HISTORY_EVENTS: Final = 10_000
"""Events in a run's history before it continues as new, unless the start says otherwise."""

LOAD_RUN: Final = "harness.load_run"
MODEL_CALL: Final = "harness.model_call"
TOOL_CALL: Final = "harness.tool_call"
RECORD: Final = "harness.record"
VERIFY: Final = "harness.verify"

_SAFE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=0.5),
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=3,
)
"""A tool without side effects, or an idempotent one: run again when its worker died."""

_ONCE = RetryPolicy(maximum_attempts=1)
"""Any other tool: at most once; an attempt whose outcome is unknown is reported so."""


def _model_retry(policy: ModelCallPolicy) -> RetryPolicy:
    """The retries of a model call: only when its worker died, up to the profile's attempts.

    The gateway's own retries and fallbacks happen inside one attempt, and a model error
    that reaches the activity is not retried.
    """
    return RetryPolicy(
        initial_interval=timedelta(seconds=0.5),
        maximum_interval=timedelta(seconds=10),
        maximum_attempts=policy.attempts,
    )


class _Caller:
    """Starts the run's activities, each carrying the writes not yet known to be done."""

    def __init__(
        self,
        run_id: str,
        key: Mapping[str, Any],
        heartbeat_s: float,
        cancelled: Callable[[], bool],
    ) -> None:
        self.run_id, self.key, self.heartbeat_s = run_id, dict(key), heartbeat_s
        self.sink: WorkflowSink | None = None
        self._cancelled = cancelled

    def check(self) -> None:
        """Stop the loop once the run is being cancelled.

        A call that ended anyway (its activity finished before it heard of the cancel) is
        the last one.
        """
        if self._cancelled():
            raise asyncio.CancelledError

    def _carried(self) -> list[dict[str, Any]]:
        return self.sink.carried() if self.sink is not None else []

    def _written(self, batches: list[dict[str, Any]]) -> None:
        if self.sink is not None:
            self.sink.written(batches)

    def recovered(self) -> None:
        """Note in the run's events that a call outlived its worker (`run_recovered`).

        As a takeover writes it embedded: the call was made again, or its outcome is unknown.
        """
        if self.sink is not None:
            state = self.sink.state.value
            self.sink.emit(RunRecovered(previous_owner=None, state=state, owner=TEMPORAL_OWNER))

    def check_cancelled(self, exc: ActivityError) -> None:
        """Raise `CancelledError` when the activity ended because the run is cancelled."""
        if isinstance(exc.cause, CancelledError):
            raise asyncio.CancelledError
        self.check()

    async def record(self, batches: list[dict[str, Any]]) -> None:
        # A local activity: a store write needs no trip through the server's queue.
        await store_call(RECORD, {"run_id": self.run_id, "writes": batches})

    async def model_call(self, request: ModelRequest, policy: ModelCallPolicy) -> dict[str, Any]:
        batches = self._carried()
        data: dict[str, Any] = await workflow.execute_activity(
            MODEL_CALL,
            {
                "run_id": self.run_id,
                "key": self.key,
                "writes": batches,
                "request": request_to_dict(request),
                "heartbeat_s": self.heartbeat_s,
            },
            start_to_close_timeout=timedelta(seconds=policy.seconds),
            heartbeat_timeout=timedelta(seconds=self.heartbeat_s),
            retry_policy=_model_retry(policy),
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        self._written(batches)
        self.check()
        return data

    async def tool_call(self, call: ToolCall, seconds: float, repeatable: bool) -> dict[str, Any]:
        batches = self._carried()
        data: dict[str, Any] = await workflow.execute_activity(
            TOOL_CALL,
            {
                "run_id": self.run_id,
                "key": self.key,
                "writes": batches,
                "call": {"id": call.id, "name": call.name, "arguments": call.arguments},
                "heartbeat_s": self.heartbeat_s,
            },
            start_to_close_timeout=timedelta(seconds=seconds + 30.0),
            heartbeat_timeout=timedelta(seconds=self.heartbeat_s),
            retry_policy=_SAFE_RETRY if repeatable else _ONCE,
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        self._written(batches)
        self.check()
        return data

    async def verify(self, answer: str, ctx: VerifyContext, seconds: float) -> VerifyResult:
        """Run the agent's completion check on a worker (it may run commands, do I/O)."""
        batches = self._carried()
        data: dict[str, Any] = await workflow.execute_activity(
            VERIFY,
            {
                "run_id": self.run_id,
                "key": self.key,
                "writes": batches,
                "answer": answer,
                "step": ctx.step,
                "messages": [message_to_dict(m) for m in ctx.messages],
                "timeout_s": seconds,
                "heartbeat_s": self.heartbeat_s,
            },
            start_to_close_timeout=timedelta(seconds=seconds + 30.0),
            heartbeat_timeout=timedelta(seconds=self.heartbeat_s),
            retry_policy=_SAFE_RETRY,
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        self._written(batches)
        self.check()
        return VerifyResult(passed=data["passed"], feedback=data["feedback"], error=data["error"])


def _checked_on_workers(spec: AgentSpec, caller: _Caller) -> AgentSpec:
    """`spec` with its completion check run by the `harness.verify` activity.

    A check may run a command or do I/O, which workflow code must not; on the worker it
    runs as embedded (`run_verifier`), and its verdict is recorded in the history.
    """
    real = spec.verifier
    if real is None:
        return spec
    shell = ShellVerifier(real) if isinstance(real, str) else real
    seconds = shell.timeout_s + 15.0 if isinstance(shell, ShellVerifier) else DEFAULT_TIMEOUT_S

    async def on_a_worker(answer: str, ctx: VerifyContext) -> VerifyResult:
        return await caller.verify(answer, ctx, seconds)

    return dataclasses.replace(spec, verifier=on_a_worker)


class _WorkflowClock:
    """The workflow's time: the same on every replay."""

    def now(self) -> float:
        return workflow.now().timestamp()

    def monotonic(self) -> float:
        return workflow.time()


class ModelProxy:
    """The agent's model as the workflow sees it: each call is a `harness.model_call`.

    `inner` is the worker's real model (never called here): the context window of its
    profile sizes the window manager, as it does embedded.
    """

    def __init__(self, inner: Model, caller: _Caller, policy: ModelCallPolicy) -> None:
        self.inner, self._caller, self._name = inner, caller, inner.name
        self._policy = policy

    @property
    def name(self) -> str:
        """The real model's name."""
        return self._name

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Run the call in an activity; its retry and fallback notices reach the loop."""
        try:
            data = await self._caller.model_call(request, self._policy)
        except ActivityError as exc:
            self._caller.check_cancelled(exc)
            raise ModelError(_failure(exc)) from None
        if int(data.get("attempt") or 1) > 1:
            self._caller.recovered()
        if request.observer is not None:
            for notice in data.get("notices") or ():
                request.observer(notice_from_dict(notice))
        return response_from_dict(data)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """The whole response at once: deltas have no live channel out of an activity."""
        yield ResponseDone(response=await self.request(request))


class ProxyToolset(Toolset):
    """The agent's tools as the workflow sees them: each call is a `harness.tool_call`.

    Checks that need no tool (unknown names, bad JSON, arguments against the schema) run
    here as they do embedded; the worker runs the tool itself with its validation,
    timeout and truncation.
    """

    def __init__(self, tools: Sequence[Mapping[str, Any]], caller: _Caller) -> None:
        super().__init__([tool_from_dict(t) for t in tools], clock=_WorkflowClock())
        self._caller = caller

    async def execute(
        self, call: ToolCall, *, limits: Limits, context: ToolContext | None = None
    ) -> ToolOutcome:
        """Run the call on a worker; an attempt whose outcome is unknown says so."""
        spec = self.get(call.name)
        if spec is None or runs_in_workflow(spec):  # agent and message tools run here
            return await super().execute(call, limits=limits, context=context)
        seconds = limits.tool_seconds(spec.timeout) + spec.grace_s
        repeatable = spec.side_effects in ("none", "idempotent")
        started = workflow.time()
        try:
            data = await self._caller.tool_call(call, seconds, repeatable)
        except ActivityError as exc:
            self._caller.check_cancelled(exc)
            if _worker_lost(exc):
                self._caller.recovered()
            text = UNKNOWN_OUTCOME if _unknown(exc) else f"The tool failed: {_failure(exc)}"
            return self.outcome(call, "tool_crash", text, limits=limits, started=started)
        sink = self._caller.sink
        blobs: dict[str, str] = data.get("blobs") or {}
        for key, text in blobs.items():
            if sink is not None:
                sink.blob(key, text)
        return _outcome(call, data)


def _outcome(call: ToolCall, data: Mapping[str, Any]) -> ToolOutcome:
    return ToolOutcome(
        call=call,
        message=Message.tool(call.id, data["shown"], name=call.name),
        status=data["status"],
        output=data["output"],
        truncated=bool(data["truncated"]),
        duration_s=float(data["duration_s"]),
        metadata=data.get("metadata") or {},
    )


def _unknown(exc: ActivityError) -> bool:
    """Whether the attempt may have run: its worker died or it ran out of time."""
    cause = exc.cause
    return isinstance(cause, TimeoutError) or cause is None


def _worker_lost(exc: ActivityError) -> bool:
    """Whether the call's worker stopped heartbeating (it died, or hangs)."""
    cause = exc.cause
    return isinstance(cause, TimeoutError) and cause.type == TimeoutType.HEARTBEAT


def _failure(exc: ActivityError) -> str:
    cause = exc.cause
    return cause.message if isinstance(cause, ApplicationError) else str(cause or exc)


@workflow.defn(name=WORKFLOW, sandboxed=False)
class RunWorkflow:
    """One harness run (see the module's docstring)."""

    def __init__(self) -> None:
        self._paused = False
        self._paused_at = "step boundary"
        self._decisions: dict[str, ApprovalDecision] = {}
        self._asked: dict[str, dict[str, Any]] = {}
        self._cancel: dict[str, Any] | None = None
        self._sink: WorkflowSink | None = None
        self._state = RunState.PENDING.value
        self._agent: AgentSpec | None = None
        self._mail = False
        self._children: WorkflowChildren | None = None
        self._mailbox: WorkflowMailbox | None = None
        self._history_events = DEFAULT_HISTORY_EVENTS
        self._renewing = False

    @workflow.signal(name="pause")
    def pause(self) -> None:
        """Pause at the next step boundary."""
        self._paused = True

    @workflow.signal(name="mail")
    def mail(self) -> None:
        """The run's inbox holds a message: read it at the next step boundary."""
        self._mail = True

    @workflow.signal(name="resume")
    def resume(self) -> None:
        """Go on after a pause."""
        self._paused = False

    @workflow.signal(name="cancelling")
    def cancelling(self, who: dict[str, Any]) -> None:
        """Who cancels and why (`by`, `reason`), sent just before the cancellation."""
        self._cancel = dict(who)

    @workflow.update(name="decide")
    def decide(self, decision: dict[str, Any]) -> None:
        """Approve or deny a call: `call_id`, `approved`, `by`, `reason`."""
        self._decisions[str(decision["call_id"])] = ApprovalDecision(
            approved=bool(decision["approved"]),
            by=str(decision.get("by") or "unknown"),
            reason=decision.get("reason"),
        )

    @workflow.query(name="state")
    def state(self) -> dict[str, Any]:
        """The run's state, its next event's seq, and the calls waiting for a decision."""
        sink = self._sink
        return {
            "state": sink.state.value if sink is not None else self._state,
            "paused": self._paused,
            "next_seq": sink.next_seq if sink is not None else None,
            "pending_approvals": list(self._asked.values()),
        }

    @workflow.run
    async def run(self, start: dict[str, Any]) -> dict[str, Any]:
        """Execute the run to its end (a pause waits in here for `resume`)."""
        run_id, heartbeat_s = str(start["run_id"]), float(start.get("heartbeat_s") or 5.0)
        self._history_events = int(start.get("history_events") or DEFAULT_HISTORY_EVENTS)
        self._mail = bool(start.get("mail"))
        host = host_of(workflow.info().task_queue)
        try:
            loaded = await self._load(run_id)
        except asyncio.CancelledError:  # cancelled before it ever ran here
            who = self._cancel or {}
            cancelled = RunCancelled(by=who.get("by"), reason=who.get("reason"))
            update = RunUpdate(state=RunState.CANCELLED, termination="cancelled")
            return await self._end_unloaded(run_id, cancelled, update)
        except ActivityError as exc:  # it cannot be loaded: its agent is unknown here ...
            error = _failure(exc)
            failed = RunFailed(error=error, error_type="LoadError", termination="error")
            update = RunUpdate(state=RunState.FAILED, termination="error", error=error)
            return await self._end_unloaded(run_id, failed, update)
        if loaded is None:  # it ended before its workflow ran (nothing to do)
            return {"state": "ended", "termination": None}
        caller = _Caller(
            run_id, loaded.key.to_dict(), heartbeat_s, lambda: self._cancel is not None
        )
        sink = self._sink = WorkflowSink(
            run_id,
            last_seq=loaded.last_seq,
            key_prefix=workflow.info().run_id,
            now=lambda: workflow.now().timestamp(),
            flush=caller.record,
            pause_requested=self._stops,
            cancel_requested=lambda: self._cancel is not None,
            usage=usage_from_dict(dict(loaded.usage)),
        )
        caller.sink = sink
        self._decisions.update(_decisions(loaded))
        try:
            while True:
                result = await self._execute(host, loaded, caller, sink)
                if result is not None:
                    return await self._finished(host, self._agent, result, sink)
                if self._renewing:
                    workflow.continue_as_new(self._renewed(start))
                await workflow.wait_condition(lambda: not self._paused or self._cancel is not None)
                caller.check()
                sink.emit(RunResumed())
                await sink.flush(RunUpdate(state=RunState.PENDING))
                again = await self._load(run_id)
                if again is None:
                    return {"state": "ended", "termination": None}
                loaded = again
                sink.state = RunState.RUNNING
        except asyncio.CancelledError:
            return await self._cancelled(sink)

    async def _load(self, run_id: str) -> LoadedRun | None:
        """Where the run left off; `None` when it has ended already (a local activity)."""
        data = await store_call(LOAD_RUN, run_id)
        loaded = LoadedRun.from_dict(data)
        if loaded.state not in (RunState.RUNNING, RunState.WAITING_TOOL):
            return None
        return loaded

    async def _end_unloaded(
        self, run_id: str, payload: RunCancelled | RunFailed, update: RunUpdate
    ) -> dict[str, Any]:
        """End a run this workflow never loaded: one write, unless it ended already."""
        batch = {
            "key": f"{workflow.info().run_id}:end",
            "first_seq": None,
            "expect": [RunState.PENDING, RunState.RUNNING, RunState.WAITING_TOOL, RunState.PAUSED],
            "events": [event_to_dict(payload, workflow.now().timestamp())],
            "update": update_to_dict(update),
        }
        await _Caller(run_id, {}, 5.0, lambda: False).record([batch])
        return {"state": update.state, "termination": update.termination}

    async def _execute(
        self, host: WorkerHost, loaded: LoadedRun, caller: _Caller, sink: WorkflowSink
    ) -> RunResult | None:
        """Run the loop from where `loaded` left off; `None` when it paused."""
        spec = self._agent = host.agent(loaded.key)
        caller.key = loaded.key.to_dict()
        self._mail = self._mail or loaded.mail
        loop = AgentLoop(
            _checked_on_workers(spec, caller),
            model=ModelProxy(host.model(spec), caller, host.model_policy(spec)),
            toolset=ProxyToolset(loaded.tools, caller),
            sink=sink,
            approver=self._approve,
            audit=sink,
            clock=_WorkflowClock(),
            handoffs=self._switch(host, loaded.key, caller, sink) if spec.handoffs else None,
            children=self._children_of(loaded.run_id, caller, sink),
            mailbox=self._mailbox_of(loaded.run_id, caller, sink),
        )
        context = loaded.context
        try:
            return await loop.run(
                loaded.run_id,
                [message_from_dict(dict(m)) for m in loaded.messages],
                not_started=loaded.not_started,
                usage=usage_from_dict(dict(loaded.usage)),
                context=None if context is None else ContextState.from_dict(context),
                elapsed_s=loaded.elapsed_s,
                task_type=loaded.key.task_type,
                variant=(loaded.key.experiment, loaded.key.variant)
                if loaded.key.experiment and loaded.key.variant
                else None,
            )
        except RunInterrupted:
            if self._renewing:  # the step is written; the next execution goes on from it
                await sink.flush()
                return None
            sink.emit(RunPaused(at=self._paused_at))
            self._paused_at = "step boundary"
            await sink.flush(RunUpdate(state=RunState.PAUSED, usage=sink.usage))
            return None

    def _stops(self) -> bool:
        """Whether the loop stops at this step boundary: paused, or its history is renewed."""
        if self._paused:
            return True
        self._renewing = self._renewing or self._history_full()
        return self._renewing

    def _history_full(self) -> bool:
        """Whether the history is due to be renewed, and nothing in flight holds it here."""
        if self._cancel is not None or self._asked:
            return False
        if self._children is not None and self._children.in_flight():
            return False
        info = workflow.info()
        return (
            info.get_current_history_length() >= self._history_events
            or info.is_continue_as_new_suggested()
        )

    def _renewed(self, start: Mapping[str, Any]) -> dict[str, Any]:
        """The first argument of the execution that continues this one."""
        return {**start, "history_events": self._history_events, "mail": self._mail}

    def _read_mail(self) -> None:
        self._mail = False

    def _waits(self) -> bool:
        """Whether a parked call stops waiting: the run pauses there (`at = "wait"`)."""
        if self._paused and self._cancel is None:
            self._paused_at = "wait"
            return True
        return False

    def _children_of(self, run_id: str, caller: _Caller, sink: WorkflowSink) -> WorkflowChildren:
        """The run's child runs: one object for the workflow (it keeps their handles)."""
        if self._children is None:
            self._children = WorkflowChildren(
                run_id,
                key=lambda: caller.key,
                sink=sink,
                start=lambda child: (
                    WORKFLOW,
                    {
                        "run_id": child,
                        "heartbeat_s": caller.heartbeat_s,
                        "history_events": self._history_events,
                    },
                ),
                cancelled=lambda: self._cancel is not None,
                paused=self._waits,
            )
        return self._children

    def _mailbox_of(self, run_id: str, caller: _Caller, sink: WorkflowSink) -> WorkflowMailbox:
        """The run's inbox: one object for the workflow (it keeps its waits' deadlines)."""
        if self._mailbox is None:
            self._mailbox = WorkflowMailbox(
                run_id,
                sink=sink,
                agent=lambda: str(caller.key["agent"]),
                mail=lambda: self._mail,
                seen=self._read_mail,
                paused=self._waits,
            )
        return self._mailbox

    def _switch(
        self, host: WorkerHost, key: AgentKey, caller: _Caller, sink: WorkflowSink
    ) -> WorkflowSwitch:
        """Handoffs: a target sits on this workflow's proxies; activities then name it."""

        def moved(handed: AgentKey) -> None:
            caller.key = handed.to_dict()
            self._agent = host.agent(handed)

        return WorkflowSwitch(
            host,
            key,
            sink=sink,
            seat=lambda spec, tools: Seat(
                spec=_checked_on_workers(spec, caller),
                model=ModelProxy(host.model(spec), caller, host.model_policy(spec)),
                toolset=ProxyToolset(tools, caller),
            ),
            moved=moved,
        )

    async def _approve(self, request: ApprovalRequest) -> ApprovalDecision:
        """Wait for `decide` on the call; the request is in the store first."""
        call_id = request.call_id
        self._asked[call_id] = {
            "call_id": call_id,
            "tool": request.tool,
            "arguments": request.arguments,
            "reason": request.reason,
        }
        if self._sink is not None:
            await self._sink.flush()
        await workflow.wait_condition(
            lambda: call_id in self._decisions or self._cancel is not None or self._paused
        )
        del self._asked[call_id]
        if call_id in self._decisions:
            return self._decisions[call_id]
        if self._cancel is not None:
            raise asyncio.CancelledError
        self._paused_at = "approval"  # asked again on resume, as embedded
        raise RunInterrupted(f"run {request.run_id} paused while call {call_id} waited")

    async def _finished(
        self, host: WorkerHost, spec: AgentSpec | None, result: RunResult, sink: WorkflowSink
    ) -> dict[str, Any]:
        assert spec is not None, "a run that ended ran an agent"
        update = RunUpdate.finished(result, host.result_data(result, spec))
        await sink.flush(update)
        return {"state": str(update.state), "termination": result.termination}

    async def _cancelled(self, sink: WorkflowSink) -> dict[str, Any]:
        who = self._cancel or {}
        sink.emit(RunCancelled(by=who.get("by"), reason=who.get("reason")))
        await sink.flush(
            RunUpdate(
                state=RunState.CANCELLED,
                termination="cancelled",
                usage=sink.usage,
                error=who.get("reason"),
            )
        )
        return {"state": RunState.CANCELLED.value, "termination": "cancelled"}


def _decisions(loaded: LoadedRun) -> dict[str, ApprovalDecision]:
    return {
        call_id: ApprovalDecision(
            approved=bool(d["approved"]), by=str(d.get("by") or "unknown"), reason=d.get("reason")
        )
        for call_id, d in loaded.decisions.items()
    }
