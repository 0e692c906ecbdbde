"""How a run ended."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from harness.core._frozen import fast_init
from harness.core.messages import Message
from harness.core.usage import Usage

__all__ = ["RunResult", "TerminationReason"]

TerminationReason = Literal[
    "final_answer",
    "max_steps",
    "max_tool_calls",
    "budget_tokens",
    "budget_cost",
    "timeout",
    "repeated_failure",
    "cancelled",
    "error",
]


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class RunResult:
    """The outcome of a run: its answer, why it ended, and what it cost."""

    run_id: str
    """The run."""
    output: str | None
    """The final answer, or the best report available when the run did not complete."""
    termination: TerminationReason
    """Why the run ended."""
    complete: bool
    """True when the model gave a final answer of its own accord."""
    usage: Usage = field(default_factory=Usage)
    """Tokens, requests, tool calls and cost of the whole run."""
    messages: tuple[Message, ...] = ()
    """The whole conversation, in order."""
    error: str | None = None
    """What went wrong, when the run ended with an error."""
    detail: str | None = None
    """Why a run stopped at a limit, as a clause: "it used all 3 of its steps"."""
    data: Any = None
    """Structured output, when the agent declares an output type: the validated value, or
    the best JSON found in the answer when it never became valid (`output_valid` False).
    Read back from the store by a process that does not know the agent, it is plain JSON."""
    output_valid: bool | None = None
    """Whether `data` matches the agent's output type; `None` when it declares none."""
    output_errors: tuple[str, ...] = ()
    """Why the answer did not match the output type, after the last repair (`$.path: what`)."""

    @property
    def ok(self) -> bool:
        """True when the run completed with a final answer."""
        return self.termination == "final_answer"
