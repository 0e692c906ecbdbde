"""The ReAct loop: the model decides, the harness acts, the result goes back.

The loop knows nothing of storage: it reports every step to the `EventSink` it is handed,
and the runtime numbers, persists and streams those events.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from harness.agent.spec import AgentSpec
from harness.agent.tool_calls import ToolCallRunner
from harness.core.codec import usage_to_dict
from harness.core.events import EventType, RunSink, summarize
from harness.core.ids import new_id
from harness.core.messages import Message, ToolCall
from harness.core.results import RunResult, TerminationReason
from harness.core.usage import Usage
from harness.errors import RunInterrupted, StoreError
from harness.gateway.model import Model, ModelRequest, ModelResponse, ResponseDone, TextDelta
from harness.tools import MemoryResultStore, ResultStore, ToolContext, Toolset
from harness.tools.approvals import ApprovalHandler
from harness.tools.audit import AuditLog

__all__ = ["EMPTY_REPLY_NUDGE", "UNKNOWN_OUTCOME", "AgentLoop"]

EMPTY_REPLY_NUDGE = (
    "Your last reply was empty. Either call a tool, or reply with your final answer as text."
)


@dataclass(kw_only=True)
class _State:
    run_id: str
    messages: list[Message]
    started: float
    usage: Usage = field(default_factory=Usage)
    step: int = 0


class AgentLoop:
    """Runs one agent on one conversation until a final answer or a limit.

    Args:
        spec: The agent.
        model: The resolved model.
        toolset: The agent's tools.
        sink: Receives every event of the run.
        stream: Use streaming responses and report text deltas as `model_delta` events.
        approver: Decides calls that need approval; without one they are denied.
        audit: Receives one record per tool call.
        results: Keeps the full text of results the model sees only in part.
    """

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
    ) -> None:
        self._spec, self._model, self._toolset = spec, model, toolset
        self._sink, self._stream = sink, stream
        self._approver, self._audit = approver, audit
        self._results = results or MemoryResultStore()
        self._tools: ToolCallRunner

    async def run(
        self,
        run_id: str,
        messages: list[Message],
        *,
        not_started: Collection[str] = (),
        usage: Usage | None = None,
    ) -> RunResult:
        """Run the loop on `messages` (system prompt and task first).

        It never raises, except `CancelledError` and `RunInterrupted` (pause).

        Args:
            run_id: The run.
            messages: The conversation so far; a resumed run's history.
            not_started: Ids of tool calls in the history known never to have started
                (they were waiting for approval); on resume they go through as new calls.
            usage: What the run consumed before (when resumed), counted against its limits.
        """
        state = _State(
            run_id=run_id, messages=messages, started=time.monotonic(), usage=usage or Usage()
        )
        context = ToolContext(run_id=run_id, workspace=self._spec.workspace, results=self._results)
        self._tools = ToolCallRunner(
            self._toolset,
            self._sink,
            policy=self._spec.approvals,
            approver=self._approver,
            audit=self._audit,
            context=context,
            checkpoint=self._sink.commit,
        )
        state.step = sum(1 for m in messages if m.role == "assistant")
        self._emit(
            "run_started",
            agent=self._spec.name,
            model=self._model.name,
            tools=[d.name for d in self._toolset.definitions()],
            max_steps=self._spec.limits.max_steps,
        )
        error_type = None
        try:
            await self._settle_interrupted_calls(state, not_started)
            result = await self._steps(state)
        except (asyncio.CancelledError, RunInterrupted, StoreError):
            raise  # the runtime's business: cancel, pause, or a store that cannot take the step
        except Exception as exc:  # a run ends with an error; it never crashes its host
            error_type = type(exc).__name__
            result = self._result(state, None, "error", error=str(exc) or error_type)
        if result.termination == "error":
            self._emit(
                "run_failed",
                error=result.error,
                error_type=error_type,
                termination="error",
                usage=usage_to_dict(result.usage),
            )
        else:
            self._emit(
                "run_finished",
                output=result.output,
                termination=result.termination,
                complete=result.complete,
                usage=usage_to_dict(result.usage),
            )
        return result

    async def _steps(self, state: _State) -> RunResult:
        while (stop := self._limit_reached(state)) is None:
            state.step += 1
            self._emit("step_started", step=state.step)
            message = (await self._call_model(state)).message
            self._append(state, message)
            if message.tool_calls:
                await self._run_tools(state, message.tool_calls)
            elif message.content and message.content.strip():
                self._emit("agent_message", step=state.step, content=message.content, final=True)
                return self._result(state, message.content, "final_answer")
            else:
                self._append(state, Message.user(EMPTY_REPLY_NUDGE))
            await self._sink.checkpoint()
        return self._result(state, self._stopped_report(state, stop), stop)

    async def _settle_interrupted_calls(self, state: _State, not_started: Collection[str]) -> None:
        """Answer the tool calls of a resumed run that never got their results.

        A call of a tool without side effects, or an idempotent one, runs again; any other
        call gets a message that its outcome is unknown, so that it never runs twice.
        """
        last = state.messages[-1] if state.messages else None
        if last is None or last.role != "assistant" or not last.tool_calls:
            return
        answered = {m.tool_call_id for m in state.messages if m.role == "tool"}
        pending = tuple(c for c in last.tool_calls if c.id not in answered)
        rerun = tuple(c for c in pending if c.id in not_started or self._safe_to_repeat(c))
        outcomes = {
            o.call.id: o for o in await self._tools.run(state.step, rerun, self._spec.limits)
        }
        for call in pending:
            outcome = outcomes.get(call.id)
            self._append(state, outcome.message if outcome else _unknown_outcome(call))
        await self._sink.checkpoint()

    def _safe_to_repeat(self, call: ToolCall) -> bool:
        spec = self._toolset.get(call.name)
        return spec is None or spec.side_effects in ("none", "idempotent")

    def _append(self, state: _State, message: Message) -> None:
        state.messages.append(message)
        self._sink.message(message)

    def _limit_reached(self, state: _State) -> TerminationReason | None:
        limits, usage = self._spec.limits, state.usage
        if state.step >= limits.max_steps:
            return "max_steps"
        elapsed = time.monotonic() - state.started
        if limits.max_seconds is not None and elapsed >= limits.max_seconds:
            return "timeout"
        if limits.max_tokens is not None and usage.total_tokens >= limits.max_tokens:
            return "budget_tokens"
        if limits.max_cost_usd is not None and usage.cost_usd >= limits.max_cost_usd:
            return "budget_cost"
        return None

    async def _call_model(self, state: _State) -> ModelResponse:
        request = ModelRequest(
            messages=tuple(state.messages),
            tools=self._toolset.definitions(),
            settings=self._spec.settings,
            request_id=new_id("req"),
        )
        self._emit(
            "model_called",
            step=state.step,
            model=self._model.name,
            messages=len(request.messages),
            stream=self._stream,
            request_id=request.request_id,
        )
        started = time.monotonic()
        response = await (
            self._streamed(state, request) if self._stream else self._model.request(request)
        )
        state.usage += response.usage
        message = response.message
        self._emit(
            "model_responded",
            step=state.step,
            finish_reason=response.finish_reason,
            content=summarize(message.content),
            usage=usage_to_dict(response.usage),
            tool_calls=[{"id": c.id, "name": c.name} for c in message.tool_calls],
            duration_s=round(time.monotonic() - started, 6),
        )
        return response

    async def _streamed(self, state: _State, request: ModelRequest) -> ModelResponse:
        async for event in self._model.stream(request):
            if isinstance(event, TextDelta):
                self._emit("model_delta", step=state.step, text=event.text)
            elif isinstance(event, ResponseDone):
                return event.response
        raise RuntimeError(f"model {self._model.name} ended its stream without a response")

    async def _run_tools(self, state: _State, calls: tuple[ToolCall, ...]) -> None:
        if state.messages[-1].content:
            self._emit(
                "agent_message", step=state.step, content=state.messages[-1].content, final=False
            )
        outcomes = await self._tools.run(state.step, calls, self._spec.limits)
        for outcome in outcomes:
            self._append(state, outcome.message)
        state.usage += Usage(tool_calls=len(calls))

    def _stopped_report(self, state: _State, reason: TerminationReason) -> str:
        last = next(
            (m.content for m in reversed(state.messages) if m.role == "assistant" and m.content),
            None,
        )
        text = (
            f"The run stopped ({reason}) after {state.step} steps "
            "before the model gave a final answer."
        )
        return f"{text} Last assistant text: {last}" if last else text

    def _result(
        self,
        state: _State,
        output: str | None,
        reason: TerminationReason,
        *,
        error: str | None = None,
    ) -> RunResult:
        return RunResult(
            run_id=state.run_id,
            output=output,
            termination=reason,
            complete=reason == "final_answer",
            usage=state.usage,
            messages=tuple(state.messages),
            error=error,
        )

    def _emit(self, kind: EventType, **payload: Any) -> None:
        self._sink.emit(kind, payload)


UNKNOWN_OUTCOME = (
    "This call was started, but the process running it stopped before its result was "
    "recorded, so whether it had any effect is unknown. Check its effect (for example, "
    "look at the files or state it would have changed) before calling it again."
)


def _unknown_outcome(call: ToolCall) -> Message:
    return Message.tool(call.id, UNKNOWN_OUTCOME, name=call.name)
