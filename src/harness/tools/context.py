"""What a running tool may know about its call: the run, the workspace, stored results."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

__all__ = ["ChildRuns", "MemoryResultStore", "ResultStore", "ToolContext", "ToolResult"]

T = TypeVar("T")


class ChildRuns(Protocol):
    """Starts and awaits the child runs of one run (the runtime's; see `AgentSpec.as_tool`)."""

    async def run(self, agent: Any, task: str, context: ToolContext) -> ToolResult:
        """Run `agent` (an `AgentSpec`, or an agent's name) on `task` as a child of the run.

        The child's id is derived from the run and `context.call_id`: a call made again
        (after a takeover) finds the child it started and waits for it.

        Raises:
            ToolError: The child failed or was cancelled, or a limit on children refused it.
        """
        ...


class ResultStore(Protocol):
    """Keeps the full text of tool results that the model saw only in part."""

    def save(self, run_id: str, call_id: str, text: str) -> None:
        """Keep the full result of one call (durable stores keep it with the step)."""
        ...

    async def load(self, run_id: str, call_id: str) -> str | None:
        """The full result of one call, or `None` if none was kept."""
        ...


class MemoryResultStore:
    """A `ResultStore` in this process's memory."""

    def __init__(self) -> None:
        self._results: dict[tuple[str, str], str] = {}

    def save(self, run_id: str, call_id: str, text: str) -> None:
        """Keep the full result of one call."""
        self._results[run_id, call_id] = text

    async def load(self, run_id: str, call_id: str) -> str | None:
        """The full result of one call, or `None` if none was kept."""
        return self._results.get((run_id, call_id))


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    """Handed to a tool function that declares a parameter of this type.

    Such a parameter is not part of the tool's JSON Schema: the model never sees it.
    """

    run_id: str = "run_local"
    """The run the call belongs to."""
    call_id: str = ""
    """The id of the call being executed."""
    workspace: Path | None = None
    """The directory the agent works in, when it has one."""
    results: ResultStore = field(default_factory=MemoryResultStore)
    """Where full results of truncated calls are kept."""
    timeout_s: float | None = None
    """Seconds this call may run (`Limits.tool_seconds`), set by the toolset for each call."""
    children: ChildRuns | None = None
    """Starts child runs (agents used as tools); set by the runtime, `None` elsewhere."""

    async def park(self, reason: str, until: Awaitable[T]) -> T:
        """Wait for `until`, something outside the run (a message, a child run).

        The runtime's version holds the run in WAITING_TOOL with `reason` in its detail and
        gives up the executor's slot while it waits; this one only awaits `until`.
        """
        return await until


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResult:
    """A tool's answer with facts for the audit log beside the text the model reads."""

    text: str
    """What the model reads."""
    metadata: Mapping[str, Any] = field(default_factory=lambda: {})
    """Facts such as an exit code or the sandbox backend; recorded, not shown."""
