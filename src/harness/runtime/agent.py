"""`Agent`: an agent definition that can also run itself."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.agent.spec import AgentSpec
from harness.runtime.harness import Harness

if TYPE_CHECKING:
    from harness.core.events import RunEvent
    from harness.core.results import RunResult

__all__ = ["Agent"]


@dataclass(frozen=True, kw_only=True, eq=False)
class Agent(AgentSpec):
    """An agent: model, instructions, tools and limits, with one-shot `run` helpers.

    `run` and `run_sync` are thin wrappers over `Harness`; use a `Harness` directly to run
    many agents or runs at once.
    """

    async def run(
        self,
        task: str,
        *,
        stream: bool = False,
        on_event: Callable[[RunEvent], None] | None = None,
        task_type: str | None = None,
    ) -> RunResult:
        """Run this agent once on `task` (`task_type`: see `Harness.submit`)."""
        async with Harness() as harness:
            return await harness.run(
                self, task, stream=stream, on_event=on_event, task_type=task_type
            )

    def run_sync(
        self,
        task: str,
        *,
        stream: bool = False,
        on_event: Callable[[RunEvent], None] | None = None,
        task_type: str | None = None,
    ) -> RunResult:
        """Run this agent once on `task`, blocking until it ends."""
        import asyncio

        return asyncio.run(self.run(task, stream=stream, on_event=on_event, task_type=task_type))
