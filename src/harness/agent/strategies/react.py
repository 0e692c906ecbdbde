"""ReAct: the model reasons and acts one step at a time until it answers."""

from __future__ import annotations

from harness.agent.strategies.base import Outcome, RunControl

__all__ = ["ReAct"]


class ReAct:
    """The default strategy: step by step, the model calls tools or answers.

    Each step the model sees everything so far. Stop conditions and hints are the loop's.
    """

    __slots__ = ()

    async def run(self, run: RunControl) -> Outcome:
        """Take steps until an accepted answer or a stop."""
        while True:
            turn = await run.turn()
            if turn.stop is not None:
                return turn.stop
            if turn.kind == "answer" and turn.text is not None:
                answer = await run.finish(turn.text)
                if answer is not None:
                    return answer
