"""Completion checks: a model saying "done" is a claim, so a verifier checks it.

A verifier runs when the model gives its final answer. It is either a Python callable or
a `ShellVerifier`, a command run in the agent's workspace through the same sandbox as the
`bash` tool. When the check fails, `feedback_message` is what goes back to the model, and
the loop goes on within the same limits. A verifier that raises, times out or cannot run
is a failed check with a clear message, never a crash::

    def mentions_total(answer: str, ctx: VerifyContext) -> bool | str:
        return "total" in answer or "the answer must state the total"

    checks = ShellVerifier("pytest -q", timeout_s=300)   # exit code 0 = pass
    result = await run_verifier(checks, answer, VerifyContext(workspace=workspace))
    if not result.passed:
        messages.append(Message.user(feedback_message(result)))
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol, cast

from harness.core.messages import Message
from harness.errors import ToolError
from harness.tools.builtin.bash import run_bash
from harness.tools.results import truncate
from harness.tools.sandbox import Sandbox, SandboxLimits

__all__ = [
    "ANSWER_ENV",
    "DEFAULT_TIMEOUT_S",
    "ShellVerifier",
    "Verifier",
    "VerifyContext",
    "VerifyOutcome",
    "VerifyResult",
    "feedback_message",
    "run_verifier",
]

ANSWER_ENV: Final = "HARNESS_ANSWER"
"""The environment variable that holds the answer for a `ShellVerifier`'s command."""

DEFAULT_TIMEOUT_S: Final = 300.0
"""Seconds a verifier may take unless `run_verifier` is told otherwise."""

_MAX_ANSWER_BYTES: Final = 100_000
"""Bytes of the answer put in `HARNESS_ANSWER`; the kernel takes at most 128 KiB per variable."""
_MARGIN_S: Final = 15.0
"""Time a shell check gets beyond its own timeout, so that it reports its own kill."""


@dataclass(frozen=True, kw_only=True, slots=True)
class VerifyResult:
    """The verdict of a completion check."""

    passed: bool
    """True when the answer passed the check."""
    feedback: str = ""
    """What the check found, for the model: the reason for a failure, or the output."""
    error: str | None = None
    """Set when the verifier itself failed (raised, timed out, could not run): the check
    then counts as failed, though the answer may be right."""


@dataclass(frozen=True, kw_only=True)
class VerifyContext:
    """What a verifier may know about the run whose answer it checks."""

    run_id: str = "run_local"
    """The run."""
    step: int = 0
    """The step in which the model gave the answer."""
    workspace: Path | None = None
    """The agent's workspace, where a shell check runs; `None` is the current directory."""
    messages: tuple[Message, ...] = ()
    """The conversation so far, the answer last."""
    allow_unsandboxed: bool = False
    """Whether the agent's own tools may run without a sandbox. A `ShellVerifier` does not
    follow it: running a check on the host needs its own `allow_unsandboxed=True`."""


VerifyOutcome = VerifyResult | bool | str | None
"""What a verifier returns: a `VerifyResult`; `True` or `None` to pass and `False` to fail;
or a string saying what is wrong (an empty string passes)."""


class Verifier(Protocol):
    """A completion check: a callable, sync or async, given the answer and the context.

    Raising `AssertionError` fails the check with the assertion's message as feedback;
    any other exception is a failed check whose `error` says what happened.
    """

    def __call__(
        self, answer: str, ctx: VerifyContext, /
    ) -> VerifyOutcome | Awaitable[VerifyOutcome]:
        """Check `answer`."""
        ...


class ShellVerifier:
    """A check command run in the agent's workspace, in the `bash` tool's sandbox.

    Exit code 0 passes. The command finds the answer in the `HARNESS_ANSWER` environment
    variable (at most 100,000 bytes; `HARNESS_ANSWER_TRUNCATED=1` when it was cut) and the
    run id in `HARNESS_RUN_ID`. On failure the model reads the command's output, its start
    and end when it is long, and its exit status.

    Args:
        command: The bash command, e.g. `"pytest -q"` or `'test -s report.md'`.
        timeout_s: Seconds before the command and all its processes are killed (a fail).
        sandbox: The sandbox to run in; `None` makes a default `Sandbox()`.
        network: Give the command the host's network.
        allow_unsandboxed: Run the command on the host when no sandbox works here. The
            check runs code the model wrote (e.g. its tests), with no approval asked, so
            this is a choice of its own, never inherited from the agent.
        env: Extra environment variables for the command.
        limits: Resource limits inside the sandbox; `timeout_s` sets their wall clock.
        max_feedback_chars: Characters of output the model reads.
    """

    def __init__(
        self,
        command: str,
        *,
        timeout_s: float = 120.0,
        sandbox: Sandbox | None = None,
        network: bool = False,
        allow_unsandboxed: bool = False,
        env: Mapping[str, str] | None = None,
        limits: SandboxLimits | None = None,
        max_feedback_chars: int = 4000,
    ) -> None:
        self.command = command
        self.timeout_s = timeout_s
        self._sandbox, self._network, self._limits = sandbox, network, limits
        self._allow_unsandboxed = allow_unsandboxed
        self._env = dict(env or {})
        self._max_chars = max_feedback_chars

    def __repr__(self) -> str:
        return f"ShellVerifier({self.command!r}, timeout_s={self.timeout_s:g})"

    async def __call__(self, answer: str, ctx: VerifyContext, /) -> VerifyResult:
        """Run the command on `answer` in `ctx.workspace` and judge it by its exit code."""
        try:
            report = await run_bash(
                self.command,
                cwd=ctx.workspace,
                timeout_s=self.timeout_s,
                extra_env=self._env | _answer_env(answer, ctx.run_id),
                sandbox=self._sandbox,
                network=self._network,
                allow_unsandboxed=self._allow_unsandboxed,
                limits=self._limits,
            )
        except ToolError as exc:
            hint = f" {exc.hint}" if exc.hint else ""
            return VerifyResult(
                passed=False, error=f"the check command could not run: {exc.message}{hint}"
            )
        output, _ = truncate(report.text, self._max_chars)
        if report.metadata.get("exit_code") == 0 and not report.metadata.get("timed_out"):
            return VerifyResult(passed=True, feedback=output)
        return VerifyResult(
            passed=False, feedback=f"The check `{self.command}` failed. Its output:\n{output}"
        )


async def run_verifier(
    verifier: Verifier,
    answer: str,
    ctx: VerifyContext,
    *,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
) -> VerifyResult:
    """Run a verifier and turn whatever it does into a `VerifyResult`; it never raises.

    A sync callable runs in a worker thread, so that a slow check does not block the
    event loop; when it times out it is abandoned (a thread cannot be stopped).

    Args:
        verifier: The check.
        answer: The model's final answer.
        ctx: The run, for the check.
        timeout_s: Seconds the check may take (`None`: no bound); a `ShellVerifier` is
            always given its own timeout and a margin.
    """
    if isinstance(verifier, ShellVerifier) and timeout_s is not None:
        timeout_s = max(timeout_s, verifier.timeout_s + _MARGIN_S)
    deadline = asyncio.timeout(timeout_s)
    try:
        async with deadline:
            outcome = await _call(verifier, answer, ctx)
    except AssertionError as exc:
        return VerifyResult(passed=False, feedback=str(exc) or "An assertion of the check failed.")
    except TimeoutError as exc:
        if not deadline.expired():  # the check's own TimeoutError: a crash like any other
            return VerifyResult(passed=False, error=_raised(verifier, exc))
        error = f"the check {_label(verifier)} did not finish within {timeout_s:g} s"
        return VerifyResult(passed=False, error=error)
    except Exception as exc:  # a broken check must not end the run
        return VerifyResult(passed=False, error=_raised(verifier, exc))
    return _verdict(outcome, verifier)


def feedback_message(result: VerifyResult) -> str:
    """What the model is told about a completion check.

    For a failure: that the task is not done yet, what the check found, and to fix it
    and answer again.
    """
    if result.passed:
        return "The completion check passed."
    if result.error is not None:
        return (
            f"Your answer could not be checked: {result.error}.\n"
            "Make sure the task is really done (check it yourself with the tools if you "
            "can), then give your final answer again."
        )
    found = result.feedback.strip() or "The check rejected the answer without saying why."
    return (
        "Your answer did not pass the completion check, so the task is not done yet.\n"
        f"{found}\n"
        "Fix what the check reports (use the tools if needed), then give your final answer "
        "again."
    )


async def _call(verifier: Verifier, answer: str, ctx: VerifyContext) -> object:
    if _is_async(verifier):
        outcome: object = verifier(answer, ctx)
    else:
        outcome = await asyncio.to_thread(verifier, answer, ctx)
    if inspect.isawaitable(outcome):
        outcome = await cast(Awaitable[object], outcome)
    return outcome


def _is_async(verifier: object) -> bool:
    """Whether calling `verifier` only makes a coroutine.

    Other callables, which may block (or return an awaitable anyway), go to a thread.
    """
    return isinstance(verifier, ShellVerifier) or inspect.iscoroutinefunction(verifier)


def _verdict(outcome: object, verifier: Verifier) -> VerifyResult:
    if isinstance(outcome, VerifyResult):
        return outcome
    if outcome is None or outcome is True:
        return VerifyResult(passed=True)
    if outcome is False:
        return VerifyResult(passed=False, feedback="The check rejected the answer.")
    if isinstance(outcome, str):
        return VerifyResult(passed=not outcome.strip(), feedback=outcome)
    return VerifyResult(
        passed=False,
        error=f"the check {_label(verifier)} returned {type(outcome).__name__}; a verifier "
        "returns a VerifyResult, a bool, a string saying what is wrong, or None",
    )


def _raised(verifier: Verifier, exc: Exception) -> str:
    detail = f"{type(exc).__name__}: {exc}".rstrip(": ")
    return f"the check {_label(verifier)} raised {detail}"


def _label(verifier: object) -> str:
    if isinstance(verifier, ShellVerifier):
        return f"`{verifier.command}`"
    name = getattr(verifier, "__qualname__", None) or type(verifier).__qualname__
    return repr(name)


def _answer_env(answer: str, run_id: str) -> dict[str, str]:
    data = answer.replace("\0", "").encode("utf-8", "replace")
    env = {ANSWER_ENV: data[:_MAX_ANSWER_BYTES].decode("utf-8", "ignore"), "HARNESS_RUN_ID": run_id}
    if len(data) > _MAX_ANSWER_BYTES:
        env["HARNESS_ANSWER_TRUNCATED"] = "1"
    return env
