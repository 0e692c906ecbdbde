"""Child runs: an agent used as a tool runs as a run of its own, below the run that called it.

A call of an agent tool (`AgentSpec.as_tool`, `tools = ["agent:NAME"]`) reaches the
`ChildRunner` of its run through `ToolContext.children`:

```text
parent run ── call c1 ──► child run  id = child_run_id(parent, c1)
                          parent_run_id = parent, root_run_id = parent's root, depth + 1
          ◄── its result (text, or its structured output as JSON); a failure: a tool error
```

- **No child runs twice.** The child's id is derived from the parent's id and the call's id,
  and the child is created with it (the store refuses a second run of one id). A call made
  again, after a takeover of the parent (the tool is `idempotent`), finds its child and
  waits for it instead of starting another.
- **The wait is durable.** It is a wait on the store (`Harness.wait`: the bus for a child
  executed here, the store for one executed elsewhere), inside `ToolContext.park`; the
  child itself is a run like any other, taken over when its owner dies.
- **Usage rolls up once.** Each run's row keeps its own usage (`usage`, folded from its own
  events) and, apart, what its children consumed (`children_usage`: each ended child's
  own usage plus its children's, by child id, so a call made again adds nothing twice).
  Aggregates (`harness cost`, `harness stats`) read own usage only: each token once.
- **Limits.** A child deeper than `ChildLimits.max_depth`, or more children of one run than
  `ChildLimits.max_children`, is refused with a tool error the model can act on.
- **Cancel and pause reach the children.** `Harness.cancel`/`pause`/`resume` cascade down
  the tree (through the store, so across processes); a parent that waits for children
  when it is paused stops waiting and pauses (the calls run again when it resumes), and a
  parent cancelled while it waits cancels the child it waits for.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from harness.core.events import ChildFinished, ChildStarted, summarize
from harness.core.states import TERMINAL_STATES, RunState
from harness.core.usage import Usage
from harness.errors import RunError, RunInterrupted, StoreConflict, ToolError
from harness.runtime.child_limits import ChildLimits
from harness.tools import ToolContext, ToolResult

if TYPE_CHECKING:
    from harness.agent.spec import AgentSpec
    from harness.runtime.harness import Harness
    from harness.runtime.runs import RunHandle
    from harness.runtime.sink import StoreSink
    from harness.store.protocol import RunRecord

__all__ = [
    "ChildLimits",
    "ChildOf",
    "ChildRunner",
    "check_child_limits",
    "child_answer",
    "child_run_id",
]

_LOOK_S: Final = 1.0
"""How often a call that waits for its child looks whether the child is paused."""

_NO_USAGE: Final = Usage()

_MARGIN_S: Final = 1.0
"""How much sooner than the toolset's deadline a call stops waiting, to cancel its child."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ChildOf:
    """Where a new run sits in a tree: its parent, its root and its depth."""

    parent_run_id: str
    """The run whose agent-tool call starts it."""
    root_run_id: str
    """The top of the tree."""
    depth: int
    """How many runs are above it."""


def child_run_id(parent_run_id: str, call_id: str) -> str:
    """The id of the child run that call `call_id` of `parent_run_id` starts.

    The same for the same call, in any process: a call made again finds its child. A
    digest, so that ids stay short however deep the tree grows.
    """
    digest = hashlib.sha256(f"{parent_run_id}\0{call_id}".encode()).hexdigest()
    return f"run_{digest[:26]}"


class ChildRunner:
    """Starts and awaits the child runs of one run (its `ToolContext.children`).

    Args:
        harness: The `Harness` executing the run: children are submitted and awaited there.
        record: The run, as claimed.
        sink: The run's sink: `child_*` events and its children's usage commit with its steps.
        handle: The run's handle here: a cancel or a pause of the run reaches its children.
        limits: Depth and count of children.

    Every run executing here has one, most never start a child: it is slotted, and makes
    its lock at the first call.
    """

    __slots__ = (
        "_children_total",
        "_ended",
        "_handle",
        "_harness",
        "_limits",
        "_lock",
        "_record",
        "_sink",
        "_started",
    )

    def __init__(
        self,
        harness: Harness,
        record: RunRecord,
        sink: StoreSink,
        handle: RunHandle,
        limits: ChildLimits,
    ) -> None:
        self._harness, self._record, self._sink = harness, record, sink
        self._handle, self._limits = handle, limits
        self._started: int | None = None
        """Children this run started so far (read from the store at the first call)."""
        self._ended: dict[str, Usage] | None = None
        """The usage of each ended child (its own and its children's), by child id."""
        self._children_total = _NO_USAGE
        """The sum of `_ended`."""
        self._lock: asyncio.Lock | None = None
        """Parallel calls count and roll up their children one at a time (`_locked`)."""

    async def run(self, agent: Any, task: str, context: ToolContext) -> ToolResult:
        """Run `agent` on `task` as a child of this run and answer with its result.

        Raises:
            ToolError: The child failed or was cancelled, took too long, or a limit refused it.
        """
        target: AgentSpec | str = agent
        child_id = child_run_id(self._record.run_id, context.call_id)
        name, existed, since = await self._start(target, task, child_id)
        self._sink.emit(
            ChildStarted(
                call_id=context.call_id,
                child_run_id=child_id,
                agent=name,
                task=summarize(task),
                depth=self._record.depth + 1,
                existed=existed,
            )
        )
        try:
            # A pause (asked before the wait too) ends the park with `RunInterrupted`.
            ended = await context.park(
                f"waiting for child run {child_id}", self._ended_child(child_id, context, since)
            )
        except (asyncio.CancelledError, RunInterrupted):
            await asyncio.shield(self._pass_on(child_id))
            raise
        await self._roll_up(ended)
        self._sink.emit(
            ChildFinished(
                call_id=context.call_id,
                child_run_id=child_id,
                state=str(ended.state),
                termination=ended.termination,
                usage=ended.total_usage,
            )
        )
        return child_answer(ended)

    async def _start(
        self, agent: AgentSpec | str, task: str, child_id: str
    ) -> tuple[str, bool, float]:
        """Create the child unless it exists.

        Returns its agent's name, whether it existed, and when it was created (the call's
        wait is counted from then, by every owner).
        """
        found = await self._harness.store.get_run(child_id)
        if found is not None:
            return found.agent, True, found.created_at
        async with self._locked():  # parallel calls count their children one at a time
            await self._check_limits()
            self._started = (self._started or 0) + 1  # held for this call from here on
        link = ChildOf(
            parent_run_id=self._record.run_id,
            root_run_id=self._record.root,
            depth=self._record.depth + 1,
        )
        try:
            # Shielded: a cancel (a pause of the run) must not stop the child half-made,
            # created but never started.
            await asyncio.shield(self._harness.submit(agent, task, run_id=child_id, child_of=link))
        except StoreConflict:  # made meanwhile (a call of the run's previous owner)
            found = await self._harness.store.get_run(child_id)
            if found is None:  # pragma: no cover - a run is never deleted
                raise
            return found.agent, True, found.created_at
        except BaseException:
            self._started -= 1
            raise
        return _name(agent), False, time.time()

    async def _check_limits(self) -> None:
        if self._started is None and self._record.depth + 1 <= self._limits.max_depth:
            children = await self._harness.store.list_runs(
                parent_run_id=self._record.run_id, limit=None
            )
            self._started = len(children)
        check_child_limits(self._record.depth + 1, self._started or 0, self._limits)

    async def _ended_child(self, child_id: str, context: ToolContext, since: float) -> RunRecord:
        """The child once it ended; cancelled (and a tool error) when the call's time is up.

        The time is counted from the child's creation, which the store keeps: a call made
        again after a takeover waits only for what is left.
        """
        left = None if context.timeout_s is None else context.timeout_s - _MARGIN_S
        limit = None if left is None else max(0.0, left - max(0.0, time.time() - since))
        try:
            async with asyncio.timeout(limit):
                await self._wait_running(child_id)
        except TimeoutError:
            seconds = context.timeout_s or 0.0
            reason = f"the call waiting for it timed out after {seconds:g} s"
            with contextlib.suppress(RunError):
                await self._harness.cancel(child_id, reason=reason, by=self._by)
            raise ToolError(
                f"child run {child_id} did not finish within {seconds:g} s and was cancelled",
                hint="Give the agent a smaller task.",
            ) from None
        record = await self._harness.store.get_run(child_id)
        assert record is not None
        assert record.state in TERMINAL_STATES
        return record

    async def _wait_running(self, child_id: str) -> None:
        """Wait until the child ends, resuming it whenever it is found paused.

        The run waits for it, so the run is not paused: a pause of the tree that reached the
        child after the run was resumed, or a pause of the child alone, would otherwise
        leave the run waiting for ever. (Pause the run to pause its children.)
        """
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_LOOK_S):
                    await self._harness.wait(child_id)
                    return
            child = await self._harness.store.get_run(child_id)
            paused = child is not None and child.state == RunState.PAUSED
            if paused and not self._handle.pause_requested:
                with contextlib.suppress(RunError):
                    await self._harness.resume(child_id)

    async def _pass_on(self, child_id: str) -> None:
        """The run was cancelled or paused while it waited: so is the child (if not already).

        A stop or a lost lease passes nothing on: the run's next owner waits again.
        """
        with contextlib.suppress(RunError):
            if self._handle.cancelled_by is not None:
                reason = f"its parent {self._record.run_id} was cancelled"
                await self._harness.cancel(child_id, reason=reason, by=self._by)
            elif self._handle.pause_requested:
                await self._harness.pause(child_id, by=self._by)

    async def _roll_up(self, ended: RunRecord) -> None:
        """Count `ended`'s usage (its own and its children's) in the run's, once per child.

        The first time, every child that ended before (under a previous owner too) is read
        from the store; then each child adds its own once, by id: a call made again adds
        nothing twice.
        """
        async with self._locked():
            if self._ended is None:
                children = await self._harness.store.list_runs(
                    parent_run_id=self._record.run_id, state=TERMINAL_STATES, limit=None
                )
                self._ended = {c.run_id: c.total_usage for c in children}
                self._children_total = sum(self._ended.values(), Usage())
            if ended.run_id not in self._ended:
                self._ended[ended.run_id] = ended.total_usage
                self._children_total += ended.total_usage
        self._sink.report_children_usage(self._children_total)

    def _locked(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    @property
    def _by(self) -> str:
        return f"run:{self._record.run_id}"


def check_child_limits(depth: int, started: int, limits: ChildLimits) -> None:
    """Refuse a child `depth` levels deep, of a run that started `started` children.

    Raises:
        ToolError: Deeper than `max_depth`, or `max_children` reached (what the model reads).
    """
    if depth > limits.max_depth:
        raise ToolError(
            f"no child run started: it would be {depth} levels deep, and runs may nest "
            f"at most {limits.max_depth} deep (max_depth)",
            hint="Do this part of the task yourself.",
        )
    if started >= limits.max_children:
        raise ToolError(
            f"no child run started: this run started {started} already, the most "
            f"one run may start (max_children)",
            hint="Use the results you have, or do the rest yourself.",
        )


def _name(agent: AgentSpec | str) -> str:
    return agent if isinstance(agent, str) else agent.name


def child_answer(child: RunRecord) -> ToolResult:
    """The child's result as the caller's tool result; a failure as a tool error."""
    facts = {"child_run_id": child.run_id, "state": str(child.state)}
    if child.state == RunState.COMPLETED:
        data = (child.result_data or {}).get("data")
        valid = (child.result_data or {}).get("output_valid")
        if data is not None and valid:
            return ToolResult(text=json.dumps(data, ensure_ascii=False), metadata=facts)
        return ToolResult(text=child.result or "", metadata=facts)
    how = "was cancelled" if child.state == RunState.CANCELLED else "failed"
    why = f": {child.error}" if child.error else f" ({child.termination})"
    raise ToolError(
        f"child run {child.run_id} ({child.agent}) {how}{why}",
        hint="Try again with a different task, or go on without this result.",
    )


_CASCADES: Final = {
    "cancel": (RunState.PENDING, RunState.RUNNING, RunState.WAITING_TOOL, RunState.PAUSED),
    "pause": (RunState.RUNNING, RunState.WAITING_TOOL),
    "resume": (RunState.PAUSED,),
}
"""The children each verb passes on to: those in a state it can move them from."""


async def cascade(harness: Harness, run_id: str, verb: str, *, by: str | None) -> None:
    """Pass `cancel`, `pause` or `resume` of `run_id` on to its children (and so on down).

    Each child gets the verb through `harness` (the store's controls: its owner may be
    another process). A child that moved meanwhile (ended, paused) is left as it is.
    """
    states = _CASCADES[verb]
    for child in await harness.store.list_runs(parent_run_id=run_id, state=states, limit=None):
        with contextlib.suppress(RunError):
            if verb == "cancel":
                reason = f"its parent {run_id} was cancelled"
                await harness.cancel(child.run_id, reason=reason, by=by)
            elif verb == "pause":
                await harness.pause(child.run_id, by=by)
            else:
                await harness.resume(child.run_id)


@dataclass(frozen=True, kw_only=True, slots=True)
class TreeNode:
    """One run of a tree (`harness runs tree`): its row, its steps and its children."""

    record: RunRecord
    """The run."""
    steps: int
    """Its model steps so far (`step_started` events)."""
    children: tuple[TreeNode, ...]
    """Its child runs, oldest first."""

    def walk(self) -> list[TreeNode]:
        """This node and every node below it, depth first."""
        return [self, *(node for child in self.children for node in child.walk())]

    def to_dict(self) -> dict[str, Any]:
        """The subtree as JSON-compatible data (`harness runs tree --json`)."""
        from harness.core.codec import usage_to_dict

        r = self.record
        return {
            "run_id": r.run_id,
            "agent": r.agent,
            "state": str(r.state),
            "depth": r.depth,
            "parent_run_id": r.parent_run_id,
            "task": r.task,
            "steps": self.steps,
            "termination": r.termination,
            "usage": usage_to_dict(r.usage),
            "children_usage": usage_to_dict(r.children_usage),
            "cost_usd": r.usage.cost_usd,
            "total_cost_usd": r.total_usage.cost_usd,
            "children": [child.to_dict() for child in self.children],
        }


async def run_tree(harness: Harness, run_id: str) -> TreeNode:
    """The tree that `run_id` belongs to, from its root: two reads and one count.

    Raises:
        RunError: No such run.
    """
    record = await harness.get(run_id)
    root = record if record.root_run_id is None else await harness.get(record.root)
    below = await harness.store.list_runs(root_run_id=root.run_id, limit=None)
    runs = [root, *below]
    steps = await harness.store.count_events([r.run_id for r in runs], types=("step_started",))
    by_parent: dict[str | None, list[RunRecord]] = {}
    for run in sorted(below, key=lambda r: (r.created_at, r.run_id)):
        by_parent.setdefault(run.parent_run_id, []).append(run)

    def node(run: RunRecord) -> TreeNode:
        kids = tuple(node(child) for child in by_parent.get(run.run_id, ()))
        return TreeNode(record=run, steps=steps.get(run.run_id, 0), children=kids)

    return node(root)
