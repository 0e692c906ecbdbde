"""`Toolset`: tools by name, and the execution of one call that never crashes the run."""

from __future__ import annotations

import asyncio
import inspect
import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, cast

from harness.core.clock import Clock, SystemClock
from harness.core.messages import Message, ToolCall, ToolDefinition
from harness.core.usage import Limits
from harness.errors import ApprovalRequired, ToolDefinitionError, ToolError
from harness.tools import _feedback
from harness.tools.results import render_result, truncate
from harness.tools.spec import ToolSpec
from harness.tools.validation import (
    ArgumentsValidator,
    InvalidArguments,
    Violation,
    validator_for,
)

__all__ = ["ToolOutcome", "ToolStatus", "Toolset"]

ToolStatus = Literal[
    "ok",
    "unknown_tool",
    "invalid_json",
    "invalid_arguments",
    "tool_error",
    "tool_crash",
    "tool_timeout",
]
"""How a tool call ended; every status but `ok` is a failure the model was told about."""


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

    Raises:
        ToolDefinitionError: Two tools share a name, or a schema is not valid JSON Schema.
    """

    def __init__(self, tools: Iterable[ToolSpec] = (), *, clock: Clock | None = None) -> None:
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
        self._clock = clock or SystemClock()

    def definitions(self) -> tuple[ToolDefinition, ...]:
        """What the model is told about each tool, in the order the tools were given."""
        return self._definitions

    def get(self, name: str) -> ToolSpec | None:
        """The tool called `name`, or `None`."""
        return self._specs.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        """The tool names, in the order the tools were given."""
        return tuple(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._specs.values())

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    async def execute(self, call: ToolCall, *, limits: Limits) -> ToolOutcome:
        """Run one tool call; every failure becomes a message the model can act on.

        Args:
            call: The call as the model made it; its name and arguments may be invalid.
            limits: Supplies the timeout and result size for tools that set none.

        Returns:
            The outcome, whose `tool` message answers `call.id`.

        Raises:
            asyncio.CancelledError: The caller cancelled the call.
            ApprovalRequired: The tool asked for a human decision before it goes on.
        """
        started = self._clock.monotonic()
        spec = self._specs.get(call.name)
        if spec is None:
            text = _feedback.unknown_tool(call.name, self.names)
            return self._outcome(call, "unknown_tool", text, started, limits.max_result_chars)
        status, text = await self._run(spec, call.arguments, limits)
        limit = spec.max_result_chars or limits.max_result_chars
        return self._outcome(call, status, text, started, limit)

    async def _run(self, spec: ToolSpec, arguments: str, limits: Limits) -> tuple[ToolStatus, str]:
        timeout = spec.timeout or limits.tool_timeout
        try:
            kwargs = self._arguments(spec, arguments)
            return "ok", render_result(await _invoke(spec.function, kwargs, timeout))
        except _Rejected as rejected:
            return rejected.status, rejected.text
        except _TimedOut:
            return "tool_timeout", _feedback.tool_timeout(spec, timeout)
        except InvalidArguments as exc:
            return "invalid_arguments", _feedback.invalid_arguments(spec, exc.violations, exc.hint)
        except ToolError as exc:
            return "tool_error", _feedback.tool_error(spec, exc)
        except ApprovalRequired:
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
        return spec.coerce(decoded) if spec.coerce else decoded

    def _outcome(
        self, call: ToolCall, status: ToolStatus, text: str, started: float, limit: int
    ) -> ToolOutcome:
        shown, cut = truncate(text, limit)
        return ToolOutcome(
            call=call,
            message=Message.tool(call.id, shown, name=call.name),
            status=status,
            output=text,
            truncated=cut > 0,
            duration_s=max(0.0, self._clock.monotonic() - started),
        )


def _decode(spec: ToolSpec, arguments: str) -> object:
    """Parse the JSON arguments; nothing at all (or `null`) means no arguments."""
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments, parse_constant=_reject_constant, parse_float=_finite)
    except (ValueError, RecursionError) as exc:
        raise _Rejected("invalid_json", _feedback.invalid_json(spec, arguments, exc)) from None
    return {} if value is None else value


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"the number {text[:40]} is too large")
    return number


def _too_deep() -> Violation:
    return Violation(path="$", message="the arguments are nested too deeply")


async def _invoke(function: Callable[..., Any], kwargs: dict[str, Any], limit_s: float) -> Any:
    """Call the tool with a deadline; sync tools run in a worker thread."""
    scope = asyncio.timeout(limit_s)
    try:
        async with scope:
            if _is_async(function):
                return await function(**kwargs)
            result = await asyncio.to_thread(function, **kwargs)
            return await result if inspect.isawaitable(result) else result
    except TimeoutError:
        if scope.expired():
            raise _TimedOut from None
        raise


def _is_async(function: Callable[..., Any]) -> bool:
    method = type(function).__call__  # an object with an async __call__ counts
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(method)
