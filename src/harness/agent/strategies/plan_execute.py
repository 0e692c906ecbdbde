"""Plan-and-Execute: a plan first, then its steps one at a time, revised when a step fails.

1. Planning: a model turn without tools asks for a JSON plan (`{"steps": [{"description":
   ...}]}`, read leniently: code fences, prose around it, a bare list or a numbered list
   all do). A reply with no plan is asked for once more; after that the plan is the whole
   task as one step. Event `plan_created` with the steps.
2. Execution: each step is a request in the conversation, then ReAct turns with tools until
   the model replies without a tool call. A step fails when that reply starts with
   `FAILED`, when its tool calls keep failing (the loop's repeated-failure hint), or when
   it takes `max_step_turns` turns.
3. Revision: after a failed step, a turn without tools asks for the steps still to do.
   Event `plan_updated`. After `max_revisions` revisions, the next failure stops the run
   with `repeated_failure`.
4. Synthesis: once no step is left, a turn without tools asks for the final answer.

Every request is a `user` message and the plan is the model's reply, so the conversation
stays valid for any provider and the plan survives in the store: a resumed run reads its
progress back from its messages and goes on with the step it was in.
All the run's limits apply to every turn, planning included.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.agent.stops import Stop
from harness.agent.strategies._plan import (
    Progress,
    final_prompt,
    plan_prompt,
    read_progress,
    retry_prompt,
    revise_prompt,
    step_prompt,
)
from harness.agent.strategies.base import Outcome, RunControl
from harness.core.events import AgentMessage, PlanCreated, PlanUpdated
from harness.errors import ConfigError

__all__ = ["PlanAndExecute"]


@dataclass(frozen=True, kw_only=True)
class PlanAndExecute:
    """The Plan-and-Execute strategy (`strategy="plan_execute"`). See the module docstring."""

    max_plan_steps: int = 8
    """Steps the model is asked to keep its plan within."""
    max_step_turns: int = 10
    """Model turns one plan step may take before it counts as failed."""
    max_revisions: int = 3
    """Revisions of the plan before a failing step stops the run."""

    def __post_init__(self) -> None:
        if self.max_plan_steps < 1 or self.max_step_turns < 1 or self.max_revisions < 0:
            raise ConfigError(
                "plan_execute options: max_plan_steps and max_step_turns must be at least "
                f"1 and max_revisions at least 0 (got {self})"
            )

    async def run(self, run: RunControl) -> Outcome:
        """Plan, execute, revise, answer."""
        while True:
            progress = read_progress(run.messages, max_step_turns=self.max_step_turns)
            outcome = await self._advance(run, progress)
            if outcome is not None:
                return outcome

    async def _advance(self, run: RunControl, progress: Progress) -> Outcome | None:
        match progress.phase:
            case "start":
                run.say(plan_prompt(run.tools, self.max_plan_steps))
            case "unreadable":
                run.say(retry_prompt(progress.problem))
            case "failed":
                return self._revise(run, progress)
            case "ready" if progress.position < len(progress.plan):
                run.say(step_prompt(progress))
            case "ready":
                run.say(final_prompt())
            case "planning":
                return await self._plan_turn(run, progress)
            case "step":
                return await self._step_turn(run)
            case "final":
                return await self._final_turn(run)
        return None

    async def _plan_turn(self, run: RunControl, before: Progress) -> Outcome | None:
        turn = await run.turn(tools=False, answer=False)
        if turn.stop is not None:
            return turn.stop
        after = read_progress(run.messages, max_step_turns=self.max_step_turns)
        if after.phase != "ready":
            return None
        steps = tuple(after.plan)
        if after.revisions == 0:
            run.emit(PlanCreated(step=run.steps, steps=steps, readable=after.readable))
        else:
            run.emit(
                PlanUpdated(
                    step=run.steps,
                    steps=steps,
                    readable=after.readable,
                    revision=after.revisions,
                    failed_step=before.failed_step,
                    reason=before.failure,
                    done=tuple(after.done),
                )
            )
        return None

    async def _step_turn(self, run: RunControl) -> Outcome | None:
        turn = await run.turn(answer=False)
        if turn.stop is not None:
            return turn.stop
        if turn.kind == "answer":
            run.emit(AgentMessage(step=run.steps, content=turn.text, final=False))
        return None

    async def _final_turn(self, run: RunControl) -> Outcome | None:
        turn = await run.turn(tools=False)
        if turn.stop is not None:
            return turn.stop
        if turn.kind == "answer" and turn.text is not None:
            return await run.finish(turn.text)
        return None

    def _revise(self, run: RunControl, progress: Progress) -> Stop | None:
        if progress.revisions >= self.max_revisions:
            return Stop(
                reason="repeated_failure",
                detail=(
                    f"the plan was revised {progress.revisions} times and a step still "
                    f"failed: {progress.failed_step!r}: {progress.failure}"
                ),
            )
        run.say(revise_prompt(progress))
        return None
