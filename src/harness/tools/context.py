"""What a running tool may know about its call: the run, the workspace, stored results.

It is also how a tool waits for something outside its run (`ToolContext.park`) and
reaches the run's inbox (`ToolContext.mailbox`): the runtime hands both down.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

if TYPE_CHECKING:
    from pathlib import Path  # only named: importing pathlib costs `import harness` 4 ms

from harness.core._frozen import fast_init

__all__ = [
    "MAX_MESSAGE_CHARS",
    "ChildRuns",
    "Letter",
    "Mailbox",
    "MemoryResultStore",
    "Parking",
    "ResultStore",
    "ToolContext",
    "ToolResult",
    "check_content",
]

T = TypeVar("T")

MAX_MESSAGE_CHARS: Final = 20_000
"""The longest message a run or a person may send to a run."""


def check_content(content: str) -> str | None:
    """Why `content` cannot be sent as a message to a run, or `None` when it can."""
    if not content.strip():
        return "the message is empty"
    if len(content) > MAX_MESSAGE_CHARS:
        return f"the message has {len(content):,} characters, more than {MAX_MESSAGE_CHARS:,}"
    return None


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


class Parking(Protocol):
    """Parks a tool call: the run waits for something outside it without holding a worker."""

    async def park(self, call_id: str, reason: str, until: Awaitable[T]) -> T:
        """Wait for `until` with the run in WAITING_TOOL; see `ToolContext.park`."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class Letter:
    """A message from a run's inbox, as a tool or the loop hands it to the model."""

    id: int
    """The message's id in the inbox."""
    sender: str
    """Who sent it: a person (`user`), or the agent of the run that sent it."""
    sender_run: str | None
    """The run that sent it, when a run did."""
    content: str
    """What it says."""

    def render(self) -> str:
        """The text the model reads: the sender named, then the message."""
        who = f"{self.sender_run} (agent {self.sender})" if self.sender_run else self.sender
        return f"[message from {who}]: {self.content}"


class Mailbox(Protocol):
    """A run's inbox, as its loop and its tools see it (the runtime keeps it durable)."""

    @property
    def has_mail(self) -> bool:
        """Whether a message may have arrived since the last `take` (no store read)."""
        ...

    async def take(self, call_id: str | None = None) -> list[Letter]:
        """The messages not delivered yet; they are delivered with the run's next commit.

        `call_id` names the tool call whose result carries them (`None`: the loop adds them
        to the conversation at a step boundary).
        """
        ...

    async def wait(self, call_id: str, deadline: float) -> list[Letter]:
        """`take` as soon as a message arrives, or `[]` at `deadline` (seconds since the epoch)."""
        ...

    async def deadline(self, call_id: str, timeout_s: float) -> float:
        """The end of this call's wait: `timeout_s` after its first run (epoch seconds).

        Kept durably, so that a call run again after a restart waits only the time left.
        """
        ...

    async def send(self, to: str, content: str, *, call_id: str) -> int:
        """Put a message in run `to`'s inbox, once per call; returns its id.

        Raises:
            ToolError: There is no run `to`, or it has ended.
        """
        ...


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
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
    parking: Parking | None = None
    """Parks a call that waits for something outside the run (see `park`); `None` outside
    an agent loop."""
    mailbox: Mailbox | None = None
    """The run's inbox, when the run has one (a run of a `Harness`)."""

    async def park(self, reason: str, until: Awaitable[T]) -> T:
        """Wait for `until` without holding a worker slot; back to RUNNING when done.

        While it waits the run is WAITING_TOOL (`reason` in its `run_waiting` event) and
        the executor's slot goes to another run; it takes one back first when `until` is
        done (runs woken from a wait before new runs, oldest first).

        The step's events commit before the wait. A run parked keeps its lease: a crash
        hands it to another process, which runs the call again, so a tool that parks must
        be safe to run again (`side_effects="idempotent"`, keyed by run id and call id,
        any deadline stored durably). A pause asked for meanwhile ends the wait with
        `RunInterrupted`; the call runs again on resume.
        """
        if self.parking is None:
            return await until
        return await self.parking.park(self.call_id, reason, until)


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResult:
    """A tool's answer with facts for the audit log beside the text the model reads."""

    text: str
    """What the model reads."""
    metadata: Mapping[str, Any] = field(default_factory=lambda: {})
    """Facts such as an exit code or the sandbox backend; recorded, not shown."""
