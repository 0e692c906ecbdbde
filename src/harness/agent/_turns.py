"""One run in progress: its conversation and counters, and the steps a strategy takes.

`ActiveRun` is the `RunControl` that `AgentLoop` hands its strategy. A step is one model
turn and, when the model calls tools, one tool round; the stop conditions of `stops` are
checked around both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Final

from harness.agent.handoff import HandoffStep, unfinished_text
from harness.agent.spec import AgentSpec
from harness.agent.stops import (
    FailureTracker,
    FailureVerdict,
    Stop,
    budget_reached,
    limit_reached,
    not_run_text,
)
from harness.agent.strategies.base import Answer, Turn
from harness.agent.tool_calls import ToolCallRunner
from harness.core._frozen import builder
from harness.core.clock import Clock
from harness.core.events import (
    AgentMessage,
    EventPayload,
    HintInjected,
    ModelCalled,
    ModelDelta,
    ModelFallback,
    ModelResponded,
    ModelRetry,
    RunSink,
    StepStarted,
    TextToolCalls,
    ToolCallRef,
    ToolCompleted,
    summarize,
)
from harness.core.ids import new_id
from harness.core.messages import MALFORMED_TOOL_CALL, Message, ToolCall, ToolDefinition
from harness.core.unicode import clean_message, clean_text
from harness.core.usage import Usage
from harness.gateway.model import (
    Model,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ResponseDone,
    TextDelta,
)
from harness.memory import TokenCounter, WindowManager
from harness.tools import Toolset
from harness.tools.context import Mailbox
from harness.tools.toolset import ToolOutcome

__all__ = ["EMPTY_REPLY_NUDGE", "EMPTY_TEXT_NUDGE", "NO_USAGE", "UNKNOWN_OUTCOME", "ActiveRun"]

EMPTY_REPLY_NUDGE: Final = (
    "Your last reply was empty. Either call a tool, or reply with your final answer as text."
)
EMPTY_TEXT_NUDGE: Final = "Your last reply was empty. Reply with text; no tool can be called now."

UNKNOWN_OUTCOME: Final = (
    "This call was started, but the process running it stopped before its result was "
    "recorded, so whether it had any effect is unknown. Check its effect (for example, "
    "look at the files or state it would have changed) before calling it again."
)

# The objects of every step, built by their slots (`core._frozen.builder`).
_step_started = builder(StepStarted)
_model_request = builder(ModelRequest)
_model_called = builder(ModelCalled)
_model_responded = builder(ModelResponded)
_call_ref = builder(ToolCallRef)
_turn = builder(Turn)

NO_USAGE: Final = Usage()
"""The usage of a run that has consumed nothing yet (shared: a `Usage` is immutable)."""

Finisher = Callable[["ActiveRun", str], Awaitable[Answer | None]]


def no_tools_nudge(names: Sequence[str], *, answer: bool) -> str:
    """What a model is told that called tools on a turn that offers none."""
    called = ", ".join(sorted({repr(name) for name in names}))
    wanted = "your final answer" if answer else "what the last message asks for"
    return (
        f"No tool can be called on this turn, so your call of {called} was not run. "
        f"Reply with text only: {wanted}."
    )


class ActiveRun:
    """The state of one run and the `RunControl` primitives over it.

    Args:
        run_id: The run.
        spec: The agent.
        model: The resolved model.
        toolset: The agent's tools.
        sink: Receives events and messages; commits them at checkpoints.
        runner: Runs tool calls.
        stream: Ask for streamed responses and report `model_delta` events.
        clock: Measures the run's time and each model call.
        messages: The conversation so far; appended to in place.
        usage: What the run consumed before (a resumed run), counted against its limits.
        finish: Decides on a final answer offered by the strategy.
        handoffs: Takes the steps that hand over to another agent; `None` when the agent
            has no handoffs (or runs without a runtime to switch agents).
        mailbox: The run's inbox; messages that arrived join the conversation at the start
            of each step (as `user` messages that name their sender).
    """

    __slots__ = (
        "_clock",
        "_counter",
        "_failures",
        "_fell_back_to",
        "_finish",
        "_handoffs",
        "_mailbox",
        "_messages",
        "_model",
        "_model_name",
        "_native",
        "_runner",
        "_sink",
        "_spec",
        "_started",
        "_steps",
        "_stream",
        "_toolset",
        "_usage",
        "elapsed_before",
        "run_id",
        "window",
    )

    def __init__(
        self,
        *,
        run_id: str,
        spec: AgentSpec,
        model: Model,
        toolset: Toolset,
        sink: RunSink,
        runner: ToolCallRunner,
        stream: bool,
        clock: Clock,
        messages: list[Message],
        usage: Usage,
        finish: Finisher,
        handoffs: HandoffStep | None = None,
        mailbox: Mailbox | None = None,
    ) -> None:
        self.run_id, self._spec, self._model, self._toolset = run_id, spec, model, toolset
        self._model_name = model.name
        self._sink, self._runner, self._stream, self._clock = sink, runner, stream, clock
        self._messages, self._usage, self._finish = messages, usage, finish
        self._handoffs = handoffs
        self._mailbox = mailbox
        self.window: WindowManager | None = None
        """Keeps each request within the model's context window; `None` sends the whole
        conversation every time."""
        self._counter = TokenCounter()
        """Counts messages' tokens when there is no window manager (which has its own)."""
        output = spec.output_spec
        self._native = output.response_format() if output is not None else None
        self._steps = sum(1 for m in messages if m.role == "assistant")
        self._started = clock.monotonic()
        self.elapsed_before = 0.0
        """Seconds the run executed before this resumption (`Limits.max_seconds` counts them)."""
        self._failures = FailureTracker(spec.limits.max_identical_failures)
        self._fell_back_to: str | None = None
        """The model the current request moved to last (its `model_fallback` notices)."""

    @property
    def spec(self) -> AgentSpec:
        """The agent."""
        return self._spec

    @property
    def handoffs(self) -> HandoffStep | None:
        """The agent's handoff steps, when it has handoffs and a runtime to switch agents."""
        return self._handoffs

    @property
    def messages(self) -> Sequence[Message]:
        """The conversation so far."""
        return self._messages

    @property
    def tools(self) -> tuple[ToolDefinition, ...]:
        """The tools the model may call (its handoff tools included)."""
        tools = self._toolset.definitions()
        return tools if self._handoffs is None else self._handoffs.tools.offered(tools)

    @property
    def usage(self) -> Usage:
        """What the run consumed so far, a resumed run's earlier usage included.

        Counted here and only here: each model response, each summary request of a
        compaction and each tool call that ran, reported to the sink as the total grows.
        """
        return self._usage

    def _consume(self, usage: Usage) -> None:
        # A new run's first usage is its first response's: nothing to add it to.
        self._usage = usage if self._usage is NO_USAGE else self._usage + usage
        self._sink.report_usage(self._usage)

    def _count_calls(self, count: int) -> None:
        self._usage = self._usage.with_tool_calls(count)
        self._sink.report_usage(self._usage)

    @property
    def steps(self) -> int:
        """Model turns taken so far, a resumed run's earlier ones included."""
        return self._steps

    def elapsed_s(self) -> float:
        """Seconds the run has executed: before its resumption, and since."""
        return self.elapsed_before + self._clock.monotonic() - self._started

    def limit_reached(self) -> Stop | None:
        """The limit the run has reached, if any (checked before each step)."""
        return limit_reached(
            self._spec.limits, steps=self._steps, usage=self._usage, elapsed_s=self.elapsed_s()
        )

    async def turn(self, *, tools: bool = True, answer: bool = True) -> Turn:
        """One step: limits, the model's turn, then its tool round. See `RunControl.turn`."""
        if (stop := self.limit_reached()) is not None:
            return Turn(kind="stopped", stop=stop)
        message, dropped = await self._reply(tools, answer)
        if message.tool_calls:
            return await self._tool_round(message)
        if message.content and message.content.strip():
            self._failures.succeeded()
            return _turn(kind="answer", text=message.content)
        return await self._unusable(tools, answer, dropped)

    async def respond(
        self, *, tools: bool, answer: bool = True, wrap_up: bool = False, reason: str | None = None
    ) -> Message:
        """Start a step and add the model's reply to the conversation (no limit checks).

        Without tools, calls the model makes anyway are dropped from its message. A turn
        that offers no tools and may give the final answer (`answer`) asks for the
        agent's output type natively, when it has one. The closing turn of a stopped run
        (`wrap_up`, with the stop's `reason`) says so in its `step_started` event.

        The reply and the usage of the call are durable before anything else happens (a
        reply with tool calls commits with its `tool_started` events): a crash from here on
        never loses what the call cost, and a resumed run goes on from the reply.
        """
        return (await self._reply(tools, answer, wrap_up=wrap_up, reason=reason))[0]

    async def _reply(
        self, tools: bool, answer: bool, *, wrap_up: bool = False, reason: str | None = None
    ) -> tuple[Message, tuple[ToolCall, ...]]:
        """`respond`, and the calls dropped from a reply on a turn without tools."""
        self._steps += 1
        self._sink.emit(_step_started(step=self._steps, wrap_up=wrap_up, reason=reason))
        if self._mailbox is not None and self._mailbox.has_mail:
            await self._read_mail(self._mailbox)
        # The model call, written out here: a coroutine of its own cost more than its lines.
        offered = self._offered(tools)
        # Without a window manager the whole conversation goes: no coroutine to await.
        sent = tuple(self._messages) if self.window is None else await self._fit(offered)
        request = self._request(sent, offered, native=answer and not offered)
        # Before the wait: a reply not yet durable commits now (what it cost is never lost),
        # and a run someone watches live commits so they see the step start.
        await self._sink.announce()
        self._fell_back_to = None
        started = self._clock.monotonic()
        response = await (self._streamed(request) if self._stream else self._model.request(request))
        response = self._received(request, _cleaned(response), started)
        message = response.message
        dropped = () if tools else message.tool_calls
        if dropped:
            message = dataclasses.replace(message, tool_calls=())
        message = self.append(message, reported=response.usage.output_tokens)
        return message, dropped

    async def _read_mail(self, mailbox: Mailbox) -> None:
        """Add the messages that arrived to the conversation; they commit with this step."""
        for letter in await mailbox.take():
            self.say(letter.render())

    async def _unusable(self, tools: bool, answer: bool, dropped: Sequence[ToolCall]) -> Turn:
        """A reply with neither text nor a call that can run: say so, count it as a failure."""
        if dropped:
            self.say(no_tools_nudge([call.name for call in dropped], answer=answer))
        else:
            self.say(EMPTY_REPLY_NUDGE if tools else EMPTY_TEXT_NUDGE)
        verdict = self._failures.record_reply("calls_without_tools" if dropped else "empty_reply")
        hint = self._hint(verdict)
        await self._sink.checkpoint()
        if verdict is not None and verdict.action == "stop":
            stop = Stop(reason="repeated_failure", detail=verdict.text)
            return Turn(kind="stopped", stop=stop)
        return Turn(kind="empty", hint=hint)

    def say(self, text: str) -> None:
        """Add a `user` message from the harness."""
        self.append(Message.user(text))

    async def finish(self, text: str) -> Answer | None:
        """Offer a final answer to the loop."""
        return await self._finish(self, text)

    def emit(self, payload: EventPayload) -> None:
        """Report one event."""
        self._sink.emit(payload)

    def append(self, message: Message, *, reported: int = 0) -> Message:
        """Add a message to the conversation with its token count, and report it.

        Args:
            message: The message.
            reported: Its tokens as the provider reported them (an assistant message's
                output tokens); otherwise the calibrated estimate counts it.

        Returns:
            The message as added, its `tokens` and `tokens_source` set.
        """
        counter = self.window.counter if self.window is not None else self._counter
        message = counter.counted(message, reported)
        self._messages.append(message)
        self._sink.message(message)
        return message

    async def settle(self, not_started: Collection[str]) -> None:
        """Answer the tool calls of a resumed run that never got their results.

        A call of a tool without side effects, or an idempotent one, or one known never to
        have started, runs (again); any other gets a message that its outcome is unknown,
        so that nothing runs twice by surprise.
        """
        last = self._messages[-1] if self._messages else None
        if last is None or last.role != "assistant" or not last.tool_calls:
            return
        answered = {m.tool_call_id for m in self._messages if m.role == "tool"}
        pending = tuple(c for c in last.tool_calls if c.id not in answered)
        handoffs = self._handoffs.tools if self._handoffs is not None else None
        unfinished = {c.id for c in pending if handoffs and handoffs.target(c.name)}
        rerun = tuple(
            c
            for c in pending
            if c.id not in unfinished and (c.id in not_started or self._runner.repeatable(c))
        )
        ran = await self._runner.run(self._steps, rerun, self._spec.limits)
        if rerun:
            self._count_calls(len(rerun))
        outcomes = {o.call.id: o for o in ran}
        for call in pending:
            outcome = outcomes.get(call.id)
            if call.id in unfinished:  # its step never committed: it did not hand over
                self.append(Message.tool(call.id, unfinished_text(call.name), name=call.name))
                continue
            self.append(outcome.message if outcome else _unknown_outcome(call))
        await self._sink.checkpoint()

    async def _tool_round(self, message: Message) -> Turn:
        if message.content:
            self.emit(AgentMessage(step=self._steps, content=message.content, final=False))
        limits, calls = self._spec.limits, message.tool_calls
        stop = budget_reached(limits, usage=self._usage, elapsed_s=self.elapsed_s())
        if stop is None and self._handoffs is not None:
            call = self._handoffs.tools.first_call(calls)
            if call is not None:
                return await self._handoffs.take(self, message, call)
        runnable = () if stop else calls[: self._calls_left(len(calls))]
        outcomes = tuple(await self._runner.run(self._steps, runnable, limits)) if runnable else ()
        repeatable = True
        for outcome in outcomes:
            self.append(outcome.message)
            repeatable = repeatable and self._runner.repeatable(outcome.call)
        self._count_calls(len(runnable))
        if len(runnable) < len(calls):
            limit = f"it may make at most {limits.max_tool_calls} tool calls"
            self.not_run(calls[len(runnable) :], not_run_text(stop.detail if stop else limit))
        verdict = self._failures.record(outcomes)
        hint = self._hint(verdict)
        if repeatable:
            await self._sink.boundary()  # results of calls safe to redo commit with the next step
        else:
            await self._sink.checkpoint()
        if stop is None and verdict is not None and verdict.action == "stop":
            stop = Stop(reason="repeated_failure", detail=verdict.text)
        kind = "stopped" if stop else "tools"
        return _turn(kind=kind, text=message.content, outcomes=outcomes, hint=hint, stop=stop)

    def _calls_left(self, wanted: int) -> int:
        limit = self._spec.limits.max_tool_calls
        return wanted if limit is None else max(0, min(wanted, limit - self._usage.tool_calls))

    def not_run(self, calls: Sequence[ToolCall], text: str) -> None:
        """Answer `calls` with `text`, as calls that were not run (`tool_completed` too)."""
        for call in calls:
            self.append(Message.tool(call.id, text, name=call.name))
            self.emit(
                ToolCompleted(
                    step=self._steps,
                    call_id=call.id,
                    tool=call.name,
                    status="not_run",
                    ok=False,
                    result=summarize(text),
                    truncated=False,
                    duration_s=0.0,
                )
            )

    def answer(self, outcome: ToolOutcome) -> None:
        """Add the outcome of a call that no tool ran (a handoff's), and report it."""
        self.append(outcome.message)
        self.emit(
            ToolCompleted(
                step=self._steps,
                call_id=outcome.call.id,
                tool=outcome.call.name,
                status=outcome.status,
                ok=outcome.ok,
                result=summarize(outcome.output),
                truncated=outcome.truncated,
                duration_s=0.0,
            )
        )
        self._count_calls(1)

    async def refused_handoff(
        self, message: Message, outcome: ToolOutcome, others: Sequence[ToolCall], text: str
    ) -> Turn:
        """End a step whose handoff call was refused (`outcome`); its other calls did not run."""
        self.answer(outcome)
        self.not_run(others, text)
        verdict = self._failures.record((outcome,))
        hint = self._hint(verdict)
        await self._sink.checkpoint()
        if verdict is not None and verdict.action == "stop":
            stop = Stop(reason="repeated_failure", detail=verdict.text)
            return Turn(kind="stopped", text=message.content, outcomes=(outcome,), stop=stop)
        return Turn(kind="tools", text=message.content, outcomes=(outcome,), hint=hint)

    def keep(self, message: Message) -> Message:
        """Count and report a message the conversation does not hold.

        A handoff's system message: the next agent's conversation starts with it.
        """
        counter = self.window.counter if self.window is not None else self._counter
        message = counter.counted(message)
        self._sink.message(message)
        return message

    async def commit(self) -> None:
        """Commit what the run recorded so far (mid-step; never stops the run)."""
        await self._sink.commit()

    def _hint(self, verdict: FailureVerdict | None) -> str | None:
        if verdict is None or verdict.action != "hint":
            return None
        self.say(verdict.text)
        self.emit(HintInjected(step=self._steps, hint=verdict.text))
        return verdict.text

    def _offered(self, tools: bool) -> tuple[ToolDefinition, ...]:
        """The tools a request offers: none, or the agent's (and its handoffs)."""
        offered = self._toolset.definitions() if tools else ()
        if tools and self._handoffs is not None:
            offered = self._handoffs.tools.offered(offered)
        return offered

    def _request(
        self, sent: tuple[Message, ...], offered: tuple[ToolDefinition, ...], *, native: bool
    ) -> ModelRequest:
        """The request of this step, reported as `model_called`."""
        request = _model_request(
            messages=sent,
            tools=offered,
            settings=self._settings(native=native),
            request_id=new_id("req"),
            observer=self._notice,
        )
        self._sink.emit(
            _model_called(
                step=self._steps,
                model=self._model_name,
                messages=len(request.messages),
                tools=len(request.tools),
                stream=self._stream,
                request_id=request.request_id,
            )
        )
        return request

    def _received(
        self, request: ModelRequest, response: ModelResponse, started: float
    ) -> ModelResponse:
        """Count the response's usage, learn from it, and report it as `model_responded`."""
        self._consume(response.usage)
        if self.window is not None:
            self.window.observe(request.messages, request.tools, response.usage)
        else:
            self._counter.observe(request.messages, request.tools, response.usage.input_tokens)
        message = response.message
        self._sink.emit(
            _model_responded(
                step=self._steps,
                finish_reason=response.finish_reason,
                content=summarize(message.content),
                usage=response.usage,
                tool_calls=tuple([_call_ref(id=c.id, name=c.name) for c in message.tool_calls]),
                tool_calls_from_text=None
                if response.tool_calls_from_text is None
                else _from_text(response),
                duration_s=round(self._clock.monotonic() - started, 6),
                model=response.profile or self._fell_back_to or self._model_name,
                prices=response.prices,
                response_model=_answered_by(response, self._model_name),
            )
        )
        return response

    async def _fit(self, tools: tuple[ToolDefinition, ...]) -> tuple[Message, ...]:
        """What to send of the conversation: all of it, or what the window manager keeps.

        The conversation itself (`messages`, the store) keeps everything; a compaction is
        reported as `context_compacted` and committed at once (a summary was paid for, and
        a resumed run goes on from it), and its summary request counts in the usage.
        """
        if self.window is None:  # `_reply` does not come here then
            return tuple(self._messages)
        prepared = await self.window.prepare(self._messages, tools, summarizer=self._model)
        compaction = prepared.compaction
        if compaction is not None:
            self._consume(compaction.usage)
            self.emit(compaction.event(self._steps))
            await self._sink.commit()
        return prepared.messages

    def _settings(self, *, native: bool) -> ModelSettings:
        """The agent's settings, with the output type's schema when `native`.

        Only turns that may give the answer and offer no tools ask for it: llama.cpp
        refuses a grammar together with tools.
        """
        settings = self._spec.settings
        if not native or self._native is None or settings.response_format is not None:
            return settings
        return dataclasses.replace(settings, response_format=self._native)

    def _notice(self, notice: ModelRetry | ModelFallback) -> None:
        """Gateway notices (retries, fallbacks) become run events, with the step."""
        if isinstance(notice, ModelFallback):
            self._fell_back_to = notice.to_model
        self.emit(dataclasses.replace(notice, step=self._steps))

    async def _streamed(self, request: ModelRequest) -> ModelResponse:
        async for event in self._model.stream(request):
            if isinstance(event, TextDelta):
                self.emit(ModelDelta(step=self._steps, text=clean_text(event.text)))
            elif isinstance(event, ResponseDone):
                return event.response
        raise RuntimeError(f"model {self._model.name} ended its stream without a response")


def _cleaned(response: ModelResponse) -> ModelResponse:
    r"""The response with lone surrogates replaced, whichever `Model` made it.

    The provider adapters clean what they read; other models (text tool-call parsers that
    decode `\ud800` escapes, a user's own `Model`) may not, and the store encodes UTF-8.
    """
    message = clean_message(response.message)
    refusal = None if response.refusal is None else clean_text(response.refusal)
    if message is response.message and refusal == response.refusal:
        return response
    return dataclasses.replace(response, message=message, refusal=refusal)


def _unknown_outcome(call: ToolCall) -> Message:
    return Message.tool(call.id, UNKNOWN_OUTCOME, name=call.name)


def _from_text(response: ModelResponse) -> TextToolCalls | None:
    """The `tool_calls_from_text` of `model_responded`: the format and what it held."""
    if response.tool_calls_from_text is None:
        return None
    calls = response.message.tool_calls
    malformed = sum(call.name == MALFORMED_TOOL_CALL for call in calls)
    return TextToolCalls(
        format=response.tool_calls_from_text, calls=len(calls) - malformed, malformed=malformed
    )


def _answered_by(response: ModelResponse, asked: str) -> str | None:
    """The model the provider says answered, when it says and it is not the one asked for."""
    return response.model if response.model and response.model != asked else None
