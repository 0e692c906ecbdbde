"""The agent loop: a strategy decides what the model is asked; the loop runs it to an end.

The loop knows nothing of storage: it reports every step to the `RunSink` it is handed,
and the runtime numbers, persists and streams those events. The strategy (`react` by
default, see `harness.agent.strategies`) takes steps through an `ActiveRun`, which checks
the stop conditions of `harness.agent.stops`. A run that stops at a limit ends with one
model turn without tools that asks for a report of what was found so far.

An agent with handoffs (`harness.agent.handoff`) may hand the run over to another agent
mid-way: the loop then goes on under that agent (its `run_started` is reported again),
from the same conversation, steps and usage.

A final answer is checked before the run ends (`harness.agent._answers`): against the
agent's output type, with repairs, then by its verifier. Each request is kept within the
model's context window by a `WindowManager` (`AgentSpec.context_policy`), one per run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence

from harness.agent._answers import AnswerChecks
from harness.agent._parking import RunParking, WorkerSlot
from harness.agent._turns import EMPTY_REPLY_NUDGE, NO_USAGE, UNKNOWN_OUTCOME, ActiveRun
from harness.agent.handoff import AgentSwitch, HandedOff, HandoffStep, carried
from harness.agent.spec import AgentSpec
from harness.agent.stops import Stop, stopped_report, wrap_up_prompt
from harness.agent.strategies import Answer, Outcome, make_strategy
from harness.agent.tool_calls import ToolCallRunner
from harness.core._frozen import builder
from harness.core.clock import Clock, SystemClock
from harness.core.events import (
    AgentMessage,
    EventPayload,
    RunFailed,
    RunFinished,
    RunSink,
    RunStarted,
)
from harness.core.messages import Message
from harness.core.results import RunResult, TerminationReason
from harness.core.unicode import clean_text
from harness.core.usage import Usage
from harness.errors import RunInterrupted, StoreError
from harness.gateway.model import Model
from harness.memory import ContextState, WindowManager
from harness.tools import ChildRuns, MemoryResultStore, ResultStore, ToolContext, Toolset
from harness.tools.approvals import ApprovalHandler
from harness.tools.audit import AuditLog
from harness.tools.context import Mailbox

__all__ = ["EMPTY_REPLY_NUDGE", "UNKNOWN_OUTCOME", "AgentLoop"]

_Labels = tuple[str | None, tuple[str, str] | None]
"""A run's task type and experiment variant, reported in each `run_started`."""

_CONTROL = (asyncio.CancelledError, RunInterrupted, StoreError)
"""The runtime's business (cancel, pause, a store that cannot take the step): they pass."""

# What every run makes, built by its slots (`core._frozen.builder`).
_run_started = builder(RunStarted)
_tool_context = builder(ToolContext)
_agent_message = builder(AgentMessage)
_run_finished = builder(RunFinished)
_run_result = builder(RunResult)


class AgentLoop:
    """Runs one agent on one conversation until a final answer or a stop condition.

    Args:
        spec: The agent; its `strategy` decides how the run proceeds.
        model: The resolved model.
        toolset: The agent's tools.
        sink: Receives every event of the run.
        stream: Use streaming responses and report text deltas as `model_delta` events.
        approver: Decides calls that need approval; without one they are denied.
        audit: Receives one record per tool call.
        results: Keeps the full text of results the model sees only in part.
        clock: Measures the run's time against `Limits.max_seconds`.
        handoffs: The runtime's side of handoffs; without it an agent's `handoffs` are
            not offered.
        children: Starts child runs for agent tools (`ToolContext.children`); the runtime's.
        slot: The runtime's worker slot of the run, given up while a tool call is parked
            (`ToolContext.park`); without it a parked call only reports its wait.
        mailbox: The run's inbox: its messages join the conversation at step boundaries,
            and the message tools reach it.
    """

    __slots__ = (
        "_approver",
        "_audit",
        "_checks",
        "_children",
        "_clock",
        "_given",
        "_mailbox",
        "_model",
        "_results",
        "_sink",
        "_slot",
        "_spec",
        "_stream",
        "_switch",
        "_toolset",
    )

    def __init__(
        self,
        spec: AgentSpec,
        *,
        model: Model,
        toolset: Toolset,
        sink: RunSink,
        stream: bool = False,
        approver: ApprovalHandler | None = None,
        audit: AuditLog | None = None,
        results: ResultStore | None = None,
        clock: Clock | None = None,
        handoffs: AgentSwitch | None = None,
        children: ChildRuns | None = None,
        slot: WorkerSlot | None = None,
        mailbox: Mailbox | None = None,
    ) -> None:
        self._given = (spec, model, toolset)
        self._spec, self._model, self._toolset = spec, model, toolset
        self._slot, self._mailbox = slot, mailbox
        self._sink, self._stream = sink, stream
        self._approver, self._audit = approver, audit
        self._results = results or MemoryResultStore()
        self._clock = clock or SystemClock()
        self._checks = AnswerChecks(spec)
        self._switch = handoffs
        self._children = children

    @property
    def spec(self) -> AgentSpec:
        """The agent running now: the one given, or the last one handed over to."""
        return self._spec

    async def run(
        self,
        run_id: str,
        messages: list[Message],
        *,
        not_started: Collection[str] = (),
        usage: Usage | None = None,
        context: ContextState | None = None,
        elapsed_s: float = 0.0,
        task_type: str | None = None,
        variant: tuple[str, str] | None = None,
    ) -> RunResult:
        """Run the loop on `messages` (system prompt and task first).

        It never raises, except `CancelledError` and `RunInterrupted` (pause).

        Args:
            run_id: The run.
            messages: The conversation so far; a resumed run's history. A new run's
                system message is `spec.system_prompt` (it holds the output type's
                instructions).
            not_started: Ids of tool calls in the history known never to have started
                (they were waiting for approval); on resume they go through as new calls.
            usage: What the run consumed before (when resumed), counted against its limits.
            context: Where the context window manager left off (the `state` of the run's
                last `context_compacted` event); without it, a resumed run compacts anew.
            elapsed_s: The time the run executed before (when resumed), counted against
                `Limits.max_seconds`.
            task_type: The run's task type, reported in `run_started` when set.
            variant: The run's experiment and variant, reported in `run_started` when set.
        """
        if self._spec is not self._given[0]:  # a loop used again after a handoff
            self._sit(*self._given)
        # A new run's two messages need no look for a handoff's system message.
        history = carried(messages) if len(messages) > 2 else messages
        run = self._active_run(run_id, history, usage or NO_USAGE)
        run.elapsed_before = elapsed_s
        labels = (task_type, variant)
        self._started(run, labels)
        error_type, stop = None, None
        try:
            run.window = self._window(context)
            if history and history[-1].tool_calls:  # calls a resumed run left unanswered
                await run.settle(not_started)
            strategy = make_strategy(self._spec.strategy, self._spec.strategy_options)
            try:
                outcome = await strategy.run(run)
            except HandedOff as handoff:
                run, outcome = await self._handed_over(run, handoff, labels)
            if isinstance(outcome, Answer):
                stop, result = None, self._result(run, outcome, "final_answer")
            else:
                stop, result = outcome, await self._concluded(run, outcome)
        except _CONTROL:
            raise
        except Exception as exc:  # a run ends with an error; it never crashes its host
            error_type = type(exc).__name__
            error = clean_text(str(exc))  # it may quote a server's (or model's) text
            result = self._result(run, None, "error", error=error or error_type)
        self._report(result, error_type, stop)
        return result

    async def _handed_over(
        self, run: ActiveRun, handoff: HandedOff, labels: _Labels
    ) -> tuple[ActiveRun, Outcome]:
        """Go on under the agent handed over to (and the next, ...) to an outcome."""
        while True:
            run = self._hand_over(run, handoff)
            self._started(run, labels)
            strategy = make_strategy(self._spec.strategy, self._spec.strategy_options)
            try:
                return run, await strategy.run(run)
            except HandedOff as again:
                handoff = again

    def _hand_over(self, run: ActiveRun, handoff: HandedOff) -> ActiveRun:
        """The run, continued under the agent it was handed over to."""
        seat = handoff.seat
        self._sit(seat.spec, seat.model, seat.toolset)
        messages = [handoff.system, *run.messages[1:]]
        after = self._active_run(run.run_id, messages, run.usage)
        after.elapsed_before = run.elapsed_s()
        after.window = self._window(run.window.state if run.window is not None else None)
        return after

    def _sit(self, spec: AgentSpec, model: Model, toolset: Toolset) -> None:
        self._spec, self._model, self._toolset = spec, model, toolset
        self._checks = AnswerChecks(spec)

    def _started(self, run: ActiveRun, labels: _Labels) -> None:
        """Report `run_started` for the agent running now, with the run's labels."""
        tools, (task_type, variant) = self._toolset.names, labels
        if self._switch is not None and run.handoffs is not None:
            tools += run.handoffs.tools.names
        self._emit(
            _run_started(
                agent=self._spec.name,
                model=self._model.name,
                strategy=self._spec.strategy,
                tools=tools,
                max_steps=self._spec.limits.max_steps,
                task_type=task_type,
                experiment=variant[0] if variant else None,
                variant=variant[1] if variant else None,
            )
        )

    def _window(self, state: ContextState | None) -> WindowManager | None:
        policy = self._spec.context_policy(self._model)
        return None if policy is None else WindowManager(policy, state=state)

    def _active_run(self, run_id: str, messages: list[Message], usage: Usage) -> ActiveRun:
        parking = RunParking(self._sink, self._slot)
        context = _tool_context(
            run_id=run_id,
            workspace=self._spec.workspace,
            results=self._results,
            children=self._children,
            parking=parking,
            mailbox=self._mailbox,
        )
        runner = ToolCallRunner(
            self._toolset,
            self._sink,
            policy=self._spec.approvals,
            approver=self._approver,
            audit=self._audit,
            context=context,
            checkpoint=self._sink.commit,
            parking=parking,
        )
        switch = self._switch
        tools = switch.tools(self._spec) if switch is not None else None
        return ActiveRun(
            run_id=run_id,
            spec=self._spec,
            model=self._model,
            toolset=self._toolset,
            sink=self._sink,
            runner=runner,
            stream=self._stream,
            clock=self._clock,
            messages=messages,
            usage=usage,
            finish=self._finish,
            handoffs=None if switch is None or tools is None else HandoffStep(switch, tools),
            mailbox=self._mailbox,
        )

    async def _finish(self, run: ActiveRun, text: str) -> Answer | None:
        """Accept or refuse a final answer the strategy offers.

        The answer must match the output type (after repairs, if any) and pass the
        verifier; a refusal adds a message that says why and returns `None`, and the
        strategy goes on.
        """
        if self._checks.verifies:
            await self._sink.commit()  # a check runs commands: the answer is durable first
            answer = await self._checks.check(run, text)
        else:
            answer = self._checks.typed(run, text)
        run.emit(_agent_message(step=run.steps, content=text, final=answer is not None))
        if answer is None:
            await self._sink.checkpoint()
        return answer

    async def _concluded(self, run: ActiveRun, stop: Stop) -> RunResult:
        """The result of a run stopped before a final answer, with its closing report."""
        report = self._checks.report(run, await self._wrap_up(run, stop))
        return self._result(run, report, stop.reason, detail=stop.detail)

    async def _wrap_up(self, run: ActiveRun, stop: Stop) -> str:
        """One model turn without tools that asks for a report; its text is the output.

        It happens once per stopped run, whatever the stop, and never fails the run: when
        the model gives nothing or the call fails, the output says why the run stopped.
        """
        steps, last_text = run.steps, _last_text(run.messages)
        run.say(wrap_up_prompt(stop) + self._checks.wrap_up_note())
        try:
            message = await run.respond(tools=False, wrap_up=True, reason=stop.reason)
        except _CONTROL:
            raise
        except Exception as exc:
            failure = f"{type(exc).__name__}: {exc}".rstrip(": ")
            report = stopped_report(stop, steps=steps, last_text=last_text)
            return f"{report} (The closing report could not be written: {failure}.)"
        if message.content and message.content.strip():
            run.emit(AgentMessage(step=run.steps, content=message.content, final=True))
            return message.content
        return stopped_report(stop, steps=steps, last_text=last_text)

    def _report(self, result: RunResult, error_type: str | None, stop: Stop | None) -> None:
        if result.termination == "error":
            self._emit(
                RunFailed(
                    error=result.error,
                    error_type=error_type,
                    termination="error",
                    usage=result.usage,
                )
            )
            return
        self._emit(
            _run_finished(
                output=result.output,
                termination=result.termination,
                complete=result.complete,
                usage=result.usage,
                detail=stop.detail if stop else None,
                output_valid=result.output_valid,
                output_errors=result.output_errors,
            )
        )

    def _result(
        self,
        run: ActiveRun,
        answer: Answer | None,
        reason: TerminationReason,
        *,
        error: str | None = None,
        detail: str | None = None,
    ) -> RunResult:
        return _run_result(
            run_id=run.run_id,
            output=answer.text if answer else None,
            termination=reason,
            complete=reason == "final_answer",
            usage=run.usage,
            messages=tuple(run.messages),
            error=error,
            detail=detail,
            data=answer.data if answer else None,
            output_valid=answer.output_valid if answer else None,
            output_errors=answer.output_errors if answer else (),
        )

    def _emit(self, payload: EventPayload) -> None:
        self._sink.emit(payload)


def _last_text(messages: Sequence[Message]) -> str | None:
    return next(
        (m.content for m in reversed(messages) if m.role == "assistant" and m.content), None
    )
