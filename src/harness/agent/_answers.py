"""What a final answer must pass before a run ends: its output type, then its verifier.

An answer that does not match the agent's output type is sent back with what is wrong,
`MAX_REPAIRS` times in a run at most; after that it is accepted as it is, with
`output_valid=False`. An answer of the right type then goes to the verifier, if the agent
has one; when the check fails, the model is told why and the run goes on (each further
answer is one more step, so the run's limits bound the checks). Every check is a
`completion_checked` event: `check` is `output_type` or `verifier`.

The repairs are counted from the conversation, so a resumed run does not start over.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from harness.agent._turns import ActiveRun
from harness.agent.output import MAX_REPAIRS, REPAIR_LEAD, ExtractResult, OutputSpec
from harness.agent.spec import AgentSpec
from harness.agent.strategies.base import Answer
from harness.agent.verify import (
    DEFAULT_TIMEOUT_S,
    ShellVerifier,
    Verifier,
    VerifyContext,
    feedback_message,
    run_verifier,
)
from harness.core._frozen import builder
from harness.core.events import CompletionChecked, summarize
from harness.core.messages import Message

__all__ = ["AnswerChecks"]

_answer_of = builder(Answer)

_MIN_CHECK_S: Final = 1.0
"""Seconds a verifier gets however little of the run's time is left."""


class AnswerChecks:
    """The checks of one agent's final answers.

    Args:
        spec: The agent: its output type, verifier, workspace and sandbox options.
    """

    __slots__ = ("_output", "_spec", "_verifier")

    def __init__(self, spec: AgentSpec) -> None:
        self._spec = spec
        self._output = spec.output_spec
        verifier = spec.verifier
        if isinstance(verifier, str):
            # Sandboxed, without network: the agent's opt-outs are for its bash tool, whose
            # calls then need approval; a check runs unasked, so it gets neither.
            verifier = ShellVerifier(verifier)
        self._verifier: Verifier | None = verifier

    @property
    def verifies(self) -> bool:
        """Whether an answer is checked by a verifier (work that takes time)."""
        return self._verifier is not None

    async def check(self, run: ActiveRun, text: str) -> Answer | None:
        """The accepted answer, or `None` when it was refused.

        A refusal adds a message to the conversation that tells the model why.
        """
        answer = self.typed(run, text)
        if answer is None or self._verifier is None:
            return answer
        return answer if await self._verify(run, self._verifier, text) else None

    def report(self, run: ActiveRun, text: str) -> Answer:
        """A stopped run's closing report, read as the output type where it can be."""
        if self._output is None:
            return Answer(text=text)
        found = self._output.extract(text)
        _checked(run, self._output, found, repair=False)
        return _answer(text, found)

    def wrap_up_note(self) -> str:
        """What the wrap-up request adds for an agent with an output type."""
        if self._output is None:
            return ""
        return (
            f"\nGive the report as one JSON value of type {self._output.name!r}, as your "
            "instructions say, filled in with what you found so far."
        )

    def typed(self, run: ActiveRun, text: str) -> Answer | None:
        """The answer read as the output type, or `None` when a repair was asked for.

        All of `check` for an agent without a verifier.
        """
        if self._output is None:
            return _answer_of(text=text)
        found = self._output.extract(text)
        repair = not found.ok and _repairs(run.messages) < MAX_REPAIRS
        _checked(run, self._output, found, repair=repair)
        if repair:
            run.say(self._output.repair_prompt(found.errors))
            return None
        return _answer(text, found)

    async def _verify(self, run: ActiveRun, verifier: Verifier, text: str) -> bool:
        spec = self._spec
        context = VerifyContext(
            run_id=run.run_id,
            step=run.steps,
            workspace=spec.workspace,
            messages=tuple(run.messages),
            allow_unsandboxed=spec.allow_unsandboxed,
        )
        timeout = DEFAULT_TIMEOUT_S
        if spec.limits.max_seconds is not None:
            left = spec.limits.max_seconds - run.elapsed_s()
            timeout = min(timeout, max(_MIN_CHECK_S, left))
        result = await run_verifier(verifier, text, context, timeout_s=timeout)
        run.emit(
            CompletionChecked(
                step=run.steps,
                check="verifier",
                passed=result.passed,
                feedback=summarize(result.feedback),
                error=result.error,
            )
        )
        if not result.passed:
            run.say(feedback_message(result))
        return result.passed


def _checked(run: ActiveRun, output: OutputSpec, found: ExtractResult, *, repair: bool) -> None:
    run.emit(
        CompletionChecked(
            step=run.steps,
            check="output_type",
            output_type=output.name,
            passed=found.ok,
            errors=tuple(found.errors[:10]),
            repair=repair,
        )
    )


def _answer(text: str, found: ExtractResult) -> Answer:
    if found.ok:
        return Answer(text=text, data=found.value, output_valid=True)
    return Answer(text=text, data=found.raw_json, output_valid=False, output_errors=found.errors)


def _repairs(messages: Sequence[Message]) -> int:
    """Repairs asked for so far in the run."""
    return sum(
        1 for m in messages if m.role == "user" and (m.content or "").startswith(REPAIR_LEAD)
    )
