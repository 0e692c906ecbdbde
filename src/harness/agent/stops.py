"""When a run stops before a final answer, and what everyone is told about it.

Limits (`harness.core.Limits`) are checked at the start of every step, in this order:
`max_steps`, `max_tool_calls`, then the budgets `max_seconds` (termination `timeout`),
`max_tokens` (`budget_tokens`) and `max_cost_usd` (`budget_cost`). The budgets are checked
once more after each model turn: a turn that reaches one does not start its tool round (its
calls are answered "not run"). A tool round never runs more calls than `max_tool_calls`
leaves; the calls past it are answered "not run" too. Whatever the limit, the loop then
makes one last model turn without tools that asks for a report (the wrap-up).

Repeated failure. A tool call fails when its outcome status is not `ok` (`unknown_tool`,
`invalid_json`, `invalid_arguments`, `tool_error`, `tool_crash`, `tool_timeout`, `denied`).
The *kind* of a failure is the tool's name (as the model wrote it) and that status; the
error text is not compared, because it often differs only in details such as a path. With
N = `Limits.max_identical_failures` (default 3), calls counted in the order the model made
them, and any call that succeeds starting the count afresh, a repeated failure is either:

- identical: the last N failed calls have the same kind, or
- alternating: the last 2N calls all failed, whatever their kinds, so that a model cannot
  fail forever by varying its mistakes.

A reply that gives nothing usable counts as a failure too, of the kind `empty_reply` (no
text and no call) or `calls_without_tools` (only tool calls, on a turn that offers no tools:
a plan, a final answer, a report). A reply with usable text starts the count afresh, like
a call that succeeds.

The counts are taken at the end of each tool round, and after each unusable reply. The
first repeated failure injects a hint (a `user` message starting with `HINT_PREFIX`, event
`hint_injected`) telling the model to change approach or stop and explain, and the count
starts again. A second one before any call succeeds (or a reply is usable) stops the run
with `repeated_failure`. A success after the hint re-arms it: the next repeated failure
gets a hint again. The counts live in
memory: a run resumed after a restart or a pause starts them from zero.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from harness.core.results import TerminationReason
from harness.core.usage import Limits, Usage
from harness.tools.toolset import ToolOutcome

__all__ = [
    "HINT_PREFIX",
    "FailureTracker",
    "FailureVerdict",
    "ReplyFailure",
    "Stop",
    "budget_reached",
    "limit_reached",
    "not_run_text",
    "stopped_report",
    "wrap_up_prompt",
]

HINT_PREFIX: Final = "Note from the harness:"
"""How every hint the harness injects into the conversation begins."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Stop:
    """Why a run stops before a final answer."""

    reason: TerminationReason
    """The termination reason recorded with the run."""
    detail: str
    """What happened, as a clause for people and for the model: "it used all 3 of its
    steps"."""


def limit_reached(limits: Limits, *, steps: int, usage: Usage, elapsed_s: float) -> Stop | None:
    """The first limit a run has reached before its next step, or `None`.

    Args:
        limits: The run's limits.
        steps: Model turns taken so far.
        usage: What the run consumed so far.
        elapsed_s: Seconds the run has executed (earlier segments included).
    """
    if steps >= limits.max_steps:
        return Stop(reason="max_steps", detail=f"it used all {limits.max_steps} of its steps")
    if limits.max_tool_calls is not None and usage.tool_calls >= limits.max_tool_calls:
        return Stop(
            reason="max_tool_calls",
            detail=f"it made {usage.tool_calls} tool calls, its limit is {limits.max_tool_calls}",
        )
    return budget_reached(limits, usage=usage, elapsed_s=elapsed_s)


def budget_reached(limits: Limits, *, usage: Usage, elapsed_s: float) -> Stop | None:
    """The first budget (time, tokens, cost) a run has reached, or `None`."""
    if limits.max_seconds is not None and elapsed_s >= limits.max_seconds:
        return Stop(
            reason="timeout",
            detail=f"it ran for {elapsed_s:.0f} s, its limit is {limits.max_seconds:g} s",
        )
    if limits.max_tokens is not None and usage.total_tokens >= limits.max_tokens:
        return Stop(
            reason="budget_tokens",
            detail=f"it used {usage.total_tokens} tokens, its budget is {limits.max_tokens}",
        )
    if limits.max_cost_usd is not None and usage.cost_usd >= limits.max_cost_usd:
        return Stop(
            reason="budget_cost",
            detail=f"it cost ${usage.cost_usd:.4f}, its budget is ${limits.max_cost_usd:.4f}",
        )
    return None


FailureKind = tuple[str, str]
"""A tool name and the status its call ended with (for a reply: `_REPLY` and its kind)."""

ReplyFailure = Literal["empty_reply", "calls_without_tools"]
"""How a reply gave nothing usable: no text and no call, or only calls on a turn without
tools."""

_REPLY: Final = "(reply)"  # not a valid tool name, so it is never a tool's kind
_REPLY_PROBLEMS: Final[dict[str, str]] = {
    "empty_reply": "were empty",
    "calls_without_tools": "called tools on turns where no tool can be called",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class FailureVerdict:
    """What to do about the failures of a tool round."""

    action: Literal["hint", "stop"]
    """`hint`: tell the model to change approach; `stop`: end the run (`repeated_failure`)."""
    text: str
    """The hint to inject, or the detail of the stop."""


class FailureTracker:
    """Counts failing tool calls across tool rounds. The rules are in the module docstring.

    Args:
        max_identical: N, the number of failures of one kind in a row that is a repeated
            failure; 2N failures of any kind in a row are one too.
    """

    __slots__ = ("_failures", "_hinted", "limit")

    def __init__(self, max_identical: int) -> None:
        self.limit = max(1, max_identical)
        self._failures: list[FailureKind] = []
        self._hinted = False

    def record(self, outcomes: Iterable[ToolOutcome]) -> FailureVerdict | None:
        """Count one tool round's outcomes, in call order; say what to do, if anything."""
        for outcome in outcomes:
            if outcome.ok:
                self.succeeded()
            else:
                self._failures.append((outcome.call.name, outcome.status))
        return self._verdict()

    def record_reply(self, kind: ReplyFailure) -> FailureVerdict | None:
        """Count one reply that gave nothing usable; say what to do, if anything."""
        self._failures.append((_REPLY, kind))
        return self._verdict()

    def succeeded(self) -> None:
        """A call succeeded or a reply was usable: start the count afresh."""
        self._failures.clear()
        self._hinted = False

    def _verdict(self) -> FailureVerdict | None:
        problem = self._problem()
        if problem is None:
            return None
        self._failures.clear()
        if self._hinted:
            return FailureVerdict(action="stop", text=f"{problem}, even after a hint")
        self._hinted = True
        return FailureVerdict(action="hint", text=_hint(problem))

    def _problem(self) -> str | None:
        failures = self._failures
        if len(failures) >= self.limit and len(set(failures[-self.limit :])) == 1:
            tool, status = failures[-1]
            if tool == _REPLY:
                return f"your last {self.limit} replies {_REPLY_PROBLEMS[status]}"
            return (
                f"the tool {tool!r} failed {self.limit} times in a row with the same kind "
                f"of error ({status})"
            )
        if len(failures) >= 2 * self.limit:
            kinds = ", ".join(sorted({f"{tool} {status}" for tool, status in failures}))
            return f"the last {len(failures)} tool calls all failed ({kinds})"
        return None


def _hint(problem: str) -> str:
    return (
        f"{HINT_PREFIX} {problem}. Repeating what failed will not help. Change your "
        "approach (other arguments, another tool, another way to the goal), or stop "
        "calling tools and explain in your answer what you tried and what blocks you."
    )


def not_run_text(detail: str) -> str:
    """The tool message answering a call that a limit kept from running."""
    return (
        f"This call was not run: the run reached a limit ({detail}). "
        "No more tools can be called in this run."
    )


def wrap_up_prompt(stop: Stop) -> str:
    """The request of the last model turn of a run stopped by a limit."""
    return (
        f"The run is stopping now ({stop.reason}): {stop.detail}. You can no longer call "
        "tools. Write your report for the user: what you found so far, what is done and "
        "what is not, and what should be done next. Reply with the report only."
    )


def stopped_report(stop: Stop, *, steps: int, last_text: str | None) -> str:
    """The output of a stopped run whose wrap-up turn gave nothing (or failed)."""
    text = (
        f"The run stopped ({stop.reason}: {stop.detail}) after {steps} steps "
        "before the model gave a final answer."
    )
    return f"{text} Last assistant text: {last_text}" if last_text else text
