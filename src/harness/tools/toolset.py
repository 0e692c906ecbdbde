"""`Toolset`: tools by name, and the execution of one call that never crashes the run."""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import types
from collections.abc import (
    Awaitable,
    Callable,
    Coroutine,
    Generator,
    Iterable,
    Iterator,
    Mapping,
)
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, cast

from harness.core._frozen import builder, fast_init
from harness.core.bounds import json_bound_problem
from harness.core.clock import Clock, SystemClock
from harness.core.messages import MALFORMED_TOOL_CALL, Message, ToolCall, ToolDefinition
from harness.core.unicode import clean_json, clean_text
from harness.core.usage import Limits
from harness.errors import ApprovalRequired, RunInterrupted, ToolDefinitionError, ToolError
from harness.tools import feedback as _feedback
from harness.tools.context import ToolContext, ToolResult
from harness.tools.limits import CallSlots
from harness.tools.results import render_result, truncate
from harness.tools.spec import ToolSpec
from harness.tools.validation import (
    ArgumentsValidator,
    InvalidArguments,
    Violation,
    validator_for,
)

__all__ = ["READ_RESULT", "ToolOutcome", "ToolStatus", "Toolset"]

READ_RESULT: Final = "read_result"
"""The built-in tool that pages through results the model saw only in part."""

ToolStatus = Literal[
    "ok",
    "unknown_tool",
    "invalid_json",
    "invalid_arguments",
    "tool_error",
    "tool_crash",
    "tool_timeout",
    "denied",
]
"""How a tool call ended; every status but `ok` is a failure the model was told about."""


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ToolOutcome:
    """The result of executing one tool call."""

    call: ToolCall
    """The call that was executed."""
    message: Message
    """The `tool` message that answers the call, as the model will see it."""
    status: ToolStatus
    """How the call ended."""
    output: str
    """The full result text, before truncation to `max_result_chars`."""
    truncated: bool
    """Whether `message` shows less than `output`."""
    duration_s: float
    """Seconds from the start of `execute` to its end."""
    metadata: Mapping[str, Any] = field(default_factory=lambda: {})
    """Facts the tool reported beside its text (`ToolResult.metadata`), for the audit log."""

    @property
    def ok(self) -> bool:
        """Whether the tool ran and returned a result."""
        return self.status == "ok"


class _Rejected(Exception):
    """A call that ends before the tool runs: bad JSON or bad arguments."""

    def __init__(self, status: ToolStatus, text: str) -> None:
        super().__init__(text)
        self.status: ToolStatus = status
        self.text = text


class _TimedOut(Exception):
    """The tool ran past its deadline and was stopped."""


class Toolset:
    """A set of tools, addressed by name, that executes the model's tool calls.

    Args:
        tools: The tools; their names must be unique.
        clock: Measures call durations.
        slots: The concurrency limit of a tool, by tool name, shared with other toolsets
            (the registry of a `Harness` hands every agent the same ones). A tool with
            `max_concurrent` that has none here gets slots of this toolset's own.

    Raises:
        ToolDefinitionError: Two tools share a name, or a schema is not valid JSON Schema.
    """

    def __init__(
        self,
        tools: Iterable[ToolSpec] = (),
        *,
        clock: Clock | None = None,
        slots: Mapping[str, CallSlots] | None = None,
    ) -> None:
        self._specs: dict[str, ToolSpec] = {}
        self._validators: dict[str, ArgumentsValidator] = {}
        for spec in tools:
            if spec.name in self._specs:
                raise ToolDefinitionError(
                    f"Two tools are named {spec.name!r}; tool names must be unique."
                )
            self._specs[spec.name] = spec
            self._validators[spec.name] = validator_for(spec.parameters, tool_name=spec.name)
        self._definitions = tuple(spec.definition() for spec in self._specs.values())
        self._signatures = {
            spec.name: signature
            for spec in self._specs.values()
            if spec.coerce is None and (signature := _signature(spec.function)) is not None
        }
        self._async = {spec.name: _is_async(spec.function) for spec in self._specs.values()}
        self._names = tuple(self._specs)
        self._clock = clock or SystemClock()
        given = slots or {}
        self._slots: dict[str, CallSlots] = {
            name: given.get(name) or CallSlots(name, spec.max_concurrent or 1)
            for name, spec in self._specs.items()
            if name in given or spec.max_concurrent is not None
        }

    def slots(self, name: str) -> CallSlots | None:
        """The concurrency limit of the tool called `name`, if it has one."""
        return self._slots.get(name)

    def definitions(self) -> tuple[ToolDefinition, ...]:
        """What the model is told about each tool, in the order the tools were given."""
        return self._definitions

    def get(self, name: str) -> ToolSpec | None:
        """The tool called `name`, or `None`."""
        return self._specs.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        """The tool names, in the order the tools were given."""
        return self._names

    def __len__(self) -> int:
        return len(self._specs)

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._specs.values())

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    async def execute(
        self, call: ToolCall, *, limits: Limits, context: ToolContext | None = None
    ) -> ToolOutcome:
        """Run one tool call; every failure becomes a message the model can act on.

        Args:
            call: The call as the model made it; its name and arguments may be invalid.
            limits: Bound the call's time (`Limits.tool_seconds`) and give the result size
                for tools that set none.
            context: Handed to tools that take a `ToolContext`; its result store keeps the
                full text of results the model sees only in part.

        Returns:
            The outcome, whose `tool` message answers `call.id`.

        Raises:
            asyncio.CancelledError: The caller cancelled the call.
            ApprovalRequired: The tool asked for a human decision before it goes on.
        """
        started = self._clock.monotonic()
        spec = self._specs.get(call.name)
        if spec is None:
            status, text = self._no_tool(call)
            return self.outcome(call, status, text, limits=limits, started=started)
        seconds = limits.tool_seconds(spec.timeout)
        context = context or ToolContext()
        # Only the tool sees its call's own context; the result store is the run's.
        own = replace(context, call_id=call.id, timeout_s=seconds) if spec.context_param else None
        slots = self._slots.get(call.name) if self._slots else None
        if slots is None:
            status, result = await self._run(spec, call.arguments, own, seconds)
        else:
            async with slots:  # the wait for a slot is not part of the call's deadline
                status, result = await self._run(spec, call.arguments, own, seconds)
        text, metadata = _split(result)
        if status == "ok" and metadata.get("timed_out"):
            # The tool stopped its own work at its deadline: the same status, plus its output.
            seconds = float(metadata.get("timeout_s") or seconds)
            status, text = "tool_timeout", f"{_feedback.tool_timeout(spec, seconds)}\n{text}"
        return self.outcome(
            call, status, text, limits=limits, started=started, context=context, metadata=metadata
        )

    def check(self, call: ToolCall, *, limits: Limits) -> ToolOutcome | None:
        """The failed outcome `call` would have without running, or `None` if it is valid.

        Used to settle unknown tools and bad arguments before anyone is asked to approve.
        """
        spec = self._specs.get(call.name)
        if spec is None:
            status, text = self._no_tool(call)
            return self.outcome(call, status, text, limits=limits)
        try:
            self._arguments(spec, call.arguments)
        except _Rejected as rejected:
            return self.outcome(call, rejected.status, rejected.text, limits=limits)
        except InvalidArguments as exc:
            text = _feedback.invalid_arguments(spec, exc.violations, exc.hint)
            return self.outcome(call, "invalid_arguments", text, limits=limits)
        return None

    def _no_tool(self, call: ToolCall) -> tuple[ToolStatus, str]:
        """The answer to a call of no tool: unknown, or a text call that could not be read."""
        if call.name == MALFORMED_TOOL_CALL:
            # Imported here: only text-parsing models make such calls, and the parsers are
            # many modules that `import harness` should not pay for.
            from harness.gateway.textcalls.malformed import malformed_call_feedback

            return "invalid_json", malformed_call_feedback(call.arguments)
        return "unknown_tool", _feedback.unknown_tool(call.name, self.names)

    async def _run(
        self, spec: ToolSpec, arguments: str, context: ToolContext | None, seconds: float
    ) -> tuple[ToolStatus, str | ToolResult]:
        try:
            kwargs = self._arguments(spec, arguments)
            if spec.context_param:
                kwargs[spec.context_param] = context
            limit_s = seconds + spec.grace_s
            value = await _invoke(spec.function, kwargs, limit_s, is_async=self._async[spec.name])
            return "ok", value if isinstance(value, ToolResult) else render_result(value)
        except _Rejected as rejected:
            return rejected.status, rejected.text
        except _TimedOut:
            return "tool_timeout", _feedback.tool_timeout(spec, seconds)
        except InvalidArguments as exc:
            return "invalid_arguments", _feedback.invalid_arguments(spec, exc.violations, exc.hint)
        except ToolError as exc:
            return "tool_error", _feedback.tool_error(spec, exc)
        except (ApprovalRequired, RunInterrupted):
            raise
        except (Exception, SystemExit) as exc:
            return "tool_crash", _feedback.tool_crash(spec, exc)

    def _arguments(self, spec: ToolSpec, arguments: str) -> dict[str, Any]:
        """Decode, validate and convert the arguments, or raise `_Rejected`."""
        value = _decode(spec, arguments)
        if not isinstance(value, dict):
            raise _Rejected("invalid_arguments", _feedback.not_an_object(spec, value))
        decoded = cast(dict[str, Any], value)
        try:
            violations = self._validators[spec.name].violations(decoded)
        except RecursionError:
            violations = [_too_deep()]
        if violations:
            raise _Rejected("invalid_arguments", _feedback.invalid_arguments(spec, violations))
        if spec.coerce:
            return spec.coerce(decoded)
        self._check_binding(spec, decoded)
        return decoded

    def _check_binding(self, spec: ToolSpec, arguments: dict[str, Any]) -> None:
        """A schema may allow keys that the function cannot take: reject them, not crash."""
        signature = self._signatures.get(spec.name)
        if signature is None:
            return
        try:
            signature.bind(**arguments)
        except TypeError as exc:
            violation = Violation(path="$", message=f"not accepted by the tool: {exc}")
            raise _Rejected(
                "invalid_arguments", _feedback.invalid_arguments(spec, [violation])
            ) from None

    def outcome(
        self,
        call: ToolCall,
        status: ToolStatus,
        text: str,
        *,
        limits: Limits,
        started: float | None = None,
        context: ToolContext | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ToolOutcome:
        """The outcome of `call` with result `text`, truncated for the model as needed.

        When the text is too long and `context` has a result store, the full text is kept
        there and the model is told how to read the rest with `read_result`.
        """
        spec = self._specs.get(call.name)
        text = clean_text(text)  # a tool's output, or the model's text quoted back to it
        limit = (spec.max_result_chars if spec else None) or limits.max_result_chars
        shown, cut = (text, 0) if len(text) <= limit else truncate(text, limit)
        if cut and context is not None and READ_RESULT in self._specs:
            context.results.save(context.run_id, call.id, text)
            note = _feedback.more_available(call.id, len(text))
            shown = truncate(text, max(1, limit - len(note) - 1))[0] + "\n" + note
        elapsed = 0.0 if started is None else self._clock.monotonic() - started
        return _tool_outcome(
            call=call,
            message=Message.tool(call.id, shown, name=call.name),
            status=status,
            output=text,
            truncated=cut > 0,
            duration_s=max(0.0, elapsed),
            metadata=metadata or {},
        )


def _signature(function: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):
        return None


def _split(result: str | ToolResult) -> tuple[str, Mapping[str, Any]]:
    if isinstance(result, ToolResult):
        return result.text, result.metadata
    return result, {}


def _decode(spec: ToolSpec, arguments: str) -> object:
    """Parse the JSON arguments; nothing at all (or `null`) means no arguments."""
    if not arguments.strip():
        return {}
    problem = json_bound_problem(arguments)
    if problem:
        hint = f"Send flatter, shorter arguments and call {spec.name!r} again."
        text = _feedback.invalid_arguments(spec, [Violation(path="$", message=problem)], hint)
        raise _Rejected("invalid_arguments", text)
    try:
        value = _DECODER.decode(arguments)
    except (ValueError, RecursionError) as exc:
        raise _Rejected("invalid_json", _feedback.invalid_json(spec, arguments, exc)) from None
    if value is None:
        return {}
    # A "\ud800" escape decodes to a lone surrogate, which no tool could write anywhere;
    # ASCII text without a "\u" escape decodes to none.
    return value if arguments.isascii() and "\\u" not in arguments else clean_json(value)


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"the number {text[:40]} is too large")
    return number


_tool_outcome = builder(ToolOutcome)

_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite)
"""Strict JSON: no NaN or Infinity, and no number too large for a float."""


def _too_deep() -> Violation:
    return Violation(path="$", message="the arguments are nested too deeply")


async def _invoke(
    function: Callable[..., Any], kwargs: dict[str, Any], limit_s: float, *, is_async: bool
) -> Any:
    """Call the tool with a deadline; sync tools run in a worker thread.

    An async tool's first step runs at once, in the caller's task: one that finishes
    without waiting (most pure tools) needs no timer at all. One that waits goes on under
    a deadline counted from before its first step, so the step's own time counts too.
    """
    if not is_async:
        return await _bounded(asyncio.timeout(limit_s), _in_thread(function, kwargs))
    deadline = asyncio.get_running_loop().time() + limit_s
    coroutine = function(**kwargs)
    try:
        waiting_on = coroutine.send(None)
    except StopIteration as done:
        return done.value
    return await _bounded(asyncio.timeout_at(deadline), _resume(coroutine, waiting_on))


async def _in_thread(function: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    result = await asyncio.to_thread(function, **kwargs)
    return await result if inspect.isawaitable(result) else result


async def _bounded(scope: asyncio.Timeout, work: Awaitable[Any]) -> Any:
    """Await `work` within `scope`; its expiry becomes `_TimedOut`."""
    try:
        async with scope:
            return await work
    except TimeoutError:
        if scope.expired():
            raise _TimedOut from None
        raise


@types.coroutine
def _resume(coroutine: Coroutine[Any, Any, Any], waiting_on: Any) -> Generator[Any, Any, Any]:
    """Go on with a coroutine that yielded `waiting_on`, as if the task awaited it itself.

    What the task sends or throws in (a cancellation) reaches the coroutine, and what it
    yields reaches the task: the rest of the coroutine runs exactly as under `await`.
    """
    while True:
        try:
            sent = yield waiting_on
        except BaseException as exc:  # a cancellation, or the generator closed
            try:
                waiting_on = coroutine.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                waiting_on = coroutine.send(sent)
            except StopIteration as done:
                return done.value


def _is_async(function: Callable[..., Any]) -> bool:
    method = type(function).__call__  # an object with an async __call__ counts
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(method)
