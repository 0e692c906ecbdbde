"""Plan-and-Execute's memory: the plan and its progress, read back from the conversation.

Every request of the strategy is a `user` message that starts with a fixed phrase, and the
plan is the model's reply to one of them. `read_progress` walks the conversation and tells
where the run stands, so a run resumed from its stored messages goes on from there, and a
live run is driven by the same reading.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from harness.agent.output import OutputSpec
from harness.agent.stops import HINT_PREFIX
from harness.core.messages import Message, ToolDefinition

__all__ = [
    "Progress",
    "final_prompt",
    "parse_plan",
    "plan_prompt",
    "read_progress",
    "retry_prompt",
    "revise_prompt",
    "step_prompt",
]

PLAN_REQUEST: Final = "Make a plan"
PLAN_RETRY: Final = "Your plan could not be read"
REVISE_REQUEST: Final = "Revise the plan"
STEP_REQUEST: Final = "Plan step"
FINAL_REQUEST: Final = "No plan steps are left"
FALLBACK_STEP: Final = "Carry out the whole task"
"""The plan of a model that twice gave no plan that could be read."""
READ_ATTEMPTS: Final = 2

_FORM: Final = '{"steps": [{"description": "..."}, {"description": "..."}]}'
_FAILED: Final = re.compile(r"[\W_]*FAILED\b")
_NUMBERED: Final = re.compile(r"^\s*\d+[.)]\s+(\S.*?)\s*$", re.MULTILINE)
_STEPS_SCHEMA: Final[dict[str, Any]] = {
    "type": "array",
    "items": {
        "anyOf": [
            {"type": "string", "minLength": 1},
            {
                "type": "object",
                "properties": {"description": {"type": "string", "minLength": 1}},
                "required": ["description"],
            },
        ]
    },
}

Phase = Literal["start", "planning", "unreadable", "ready", "step", "failed", "final"]


@dataclass(kw_only=True)
class Progress:
    """Where a Plan-and-Execute run stands."""

    max_step_turns: int
    """Model turns a step may take; a step that takes them without a reply has failed."""
    phase: Phase = "start"
    """`start`: no plan asked for; `planning`: a plan (or revision) is asked for;
    `unreadable`: the reply was no plan; `ready`: the next step (or the final answer) can
    be asked for; `step`: a step is under way; `failed`: a step failed; `final`: the
    final answer is asked for."""
    plan: tuple[str, ...] = ()
    """The current plan's steps (after the last revision)."""
    position: int = 0
    """The index in `plan` of the step under way, or next."""
    done: list[str] = field(default_factory=lambda: [])
    """Descriptions of the steps done, across revisions."""
    revisions: int = 0
    """Revisions made."""
    readable: bool = True
    """Whether the current plan was read from the model's reply (not a fallback)."""
    problem: str | None = None
    """Why the last reply was no plan."""
    failed_step: str | None = None
    """The step that failed last."""
    failure: str | None = None
    """Why it failed."""
    step_turns: int = 0
    """Model turns spent on the step under way."""
    _revising: bool = False
    _attempts: int = 0

    def on_request(self, text: str) -> None:
        """Follow one `user` message (the strategy's requests; others are ignored)."""
        if text.startswith((PLAN_REQUEST, REVISE_REQUEST)):
            self.phase, self._attempts = "planning", 0
            self._revising = text.startswith(REVISE_REQUEST)
        elif text.startswith(PLAN_RETRY):
            self.phase = "planning"
        elif text.startswith(STEP_REQUEST):
            self.phase, self.step_turns = "step", 0
        elif text.startswith(FINAL_REQUEST):
            self.phase = "final"
        elif text.startswith(HINT_PREFIX) and self.phase == "step":
            self.fail("its tool calls kept failing")

    def on_reply(self, message: Message) -> None:
        """Follow one assistant message."""
        text = (message.content or "").strip()
        if self.phase == "planning" and text:
            self._read_plan(text)
        elif self.phase == "step":
            self.step_turns += 1
            if text and not message.tool_calls:
                self._step_result(text)
            elif self.step_turns >= self.max_step_turns:
                self.fail(f"it took {self.step_turns} model turns without a result")

    def fail(self, reason: str) -> None:
        """Mark the step under way as failed."""
        self.phase, self.failure = "failed", reason
        self.failed_step = self.plan[self.position] if self.position < len(self.plan) else None

    def _step_result(self, text: str) -> None:
        if _FAILED.match(text):
            self.fail(_FAILED.sub("", text, count=1).lstrip(" :-") or "the model said it failed")
            return
        self.done.append(self.plan[self.position])
        self.position += 1
        self.phase = "ready"

    def _read_plan(self, text: str) -> None:
        self._attempts += 1
        steps, self.problem = parse_plan(text)
        if steps is None and self._attempts < READ_ATTEMPTS:
            self.phase = "unreadable"
            return
        self.readable = steps is not None
        if steps is None:  # keep going: the failed step and the rest, or the whole task
            steps = self.plan[self.position :] if self._revising else (FALLBACK_STEP,)
        self.revisions += int(self._revising)
        self.plan, self.position, self.phase = steps, 0, "ready"


def read_progress(messages: Sequence[Message], *, max_step_turns: int) -> Progress:
    """Where the run stands, from its conversation (everything after the task counts).

    A step that took `max_step_turns` model turns without a reply has failed.
    """
    progress = Progress(max_step_turns=max_step_turns)
    task = next((i for i, m in enumerate(messages) if m.role == "user"), len(messages))
    for message in messages[task + 1 :]:
        if message.role == "user":
            progress.on_request(message.content or "")
        elif message.role == "assistant":
            progress.on_reply(message)
    return progress


def parse_plan(text: str) -> tuple[tuple[str, ...] | None, str | None]:
    """The steps in a reply: JSON (leniently read) or a numbered list; else why not."""
    found = _plan_spec().extract(text)
    if found.ok:
        return _descriptions(found.value), None
    numbered = tuple(_NUMBERED.findall(text))
    if numbered:
        return numbered, None
    return None, "; ".join(found.errors)


@functools.cache
def _plan_spec() -> OutputSpec:
    plan = {"type": "object", "properties": {"steps": _STEPS_SCHEMA}, "required": ["steps"]}
    return OutputSpec.from_type({"title": "plan", "anyOf": [plan, _STEPS_SCHEMA]})


def _descriptions(value: Any) -> tuple[str, ...]:
    items = cast(list[Any], value["steps"] if isinstance(value, Mapping) else value)
    return tuple(
        str(
            cast(Mapping[str, Any], item)["description"] if isinstance(item, Mapping) else item
        ).strip()
        for item in items
    )


def plan_prompt(tools: Sequence[ToolDefinition], max_steps: int) -> str:
    """The request for the first plan."""
    listed = "\n".join(f"- {t.name}: {_first_line(t.description)}" for t in tools)
    available = f"Tools the steps can use:\n{listed}" if tools else "There are no tools."
    return (
        f"{PLAN_REQUEST} for the task above before you act; do not do the work yet.\n"
        f"{available}\nReply with JSON only, in this form:\n{_FORM}\nUse at most "
        f"{max_steps} steps, each one piece of work that can be done and checked on its own."
    )


def retry_prompt(problem: str | None) -> str:
    """The request for a plan again, after a reply that was none."""
    return f"{PLAN_RETRY}: {problem or 'no steps were found'}.\nReply with JSON only: {_FORM}"


def step_prompt(progress: Progress) -> str:
    """The request to carry out the next step."""
    number, total = progress.position + 1, len(progress.plan)
    return (
        f"{STEP_REQUEST} {number} of {total}: {progress.plan[progress.position]}\n"
        "Do this step now, using the tools as needed. When it is done, reply without a "
        "tool call with a short account of what you found or did. If it cannot be done, "
        "reply with FAILED: and the reason."
    )


def revise_prompt(progress: Progress) -> str:
    """The request to revise the plan after a failed step."""
    done = "; ".join(progress.done) or "none"
    return (
        f"{REVISE_REQUEST}: the step {json.dumps(progress.failed_step)} failed: "
        f"{progress.failure}\nSteps done so far: {done}.\nReply with JSON only, in the "
        f"same form ({_FORM}), listing the steps still to do, not those done. Find another "
        'way to the goal; if the task cannot be done, reply with {"steps": []}.'
    )


def final_prompt() -> str:
    """The request for the final answer, once no step is left."""
    return (
        f"{FINAL_REQUEST}. Reply now with the final answer to the task, from what the steps "
        "found; if a part could not be done, say which and why. Do not call tools."
    )


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
