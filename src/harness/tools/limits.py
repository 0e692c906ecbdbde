"""`CallSlots`: at most N calls of one tool at once, whoever makes them.

A `Toolset` takes a slot before a call of a limited tool starts and gives it back when the
call ends; calls beyond the limit wait, in arrival order. The wait comes before the call's
deadline starts: `ToolSpec.timeout` bounds the tool's own work, not its time in the queue.
The runtime's tool registry keeps one `CallSlots` per tool and hands the same one to every
agent's toolset, so the limit holds across all agents and runs of a `Harness`.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

from harness.errors import ToolDefinitionError

__all__ = ["CallSlots"]


class CallSlots:
    """The slots of one tool: `limit` calls may run at once, the others wait their turn.

    Args:
        tool: The tool's name (in messages).
        limit: Calls that may run at once, at least 1.

    Raises:
        ToolDefinitionError: `limit` is below 1.
    """

    def __init__(self, tool: str, limit: int) -> None:
        if limit < 1:
            raise ToolDefinitionError(f"Tool {tool!r}: max_concurrent must be >= 1, not {limit}.")
        self.tool = tool
        self.limit = limit
        self.running = 0
        """Calls holding a slot now."""
        self.waiting = 0
        """Calls waiting for a slot now."""
        self.peak = 0
        """The most calls that ever held a slot at once."""
        self._semaphore = asyncio.Semaphore(limit)

    async def __aenter__(self) -> CallSlots:
        self.waiting += 1
        try:
            await self._semaphore.acquire()
        finally:
            self.waiting -= 1
        self.running += 1
        self.peak = max(self.peak, self.running)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.running -= 1
        self._semaphore.release()

    def __repr__(self) -> str:
        return (
            f"CallSlots({self.tool!r}, limit={self.limit}, running={self.running}, "
            f"waiting={self.waiting})"
        )
