"""`WorkflowChildren`: agents used as tools, on Temporal (each child run a child workflow).

An agent tool's call runs in workflow code (`ToolContext.children`), as `ChildRunner` does
embedded:

1. the `harness.start_child` local activity makes the child's row unless it exists: its id
   derived from the run and the call (`child_run_id`), `parent_run_id`, `root_run_id` and
   `depth`, or a refusal (`[children]` limits) the model reads as a tool error. Parallel
   calls of one step take turns here (patch `serial-child-starts`), so that they count each
   other's children;
2. `child_started`, then the call parks (`run_waiting`; the run's row WAITING_TOOL), and the
   step is written before the child starts;
3. the child's workflow starts as a child of this one (workflow id = the child's run id, so
   a replay finds it; `ParentClosePolicy.REQUEST_CANCEL`), and the parent awaits it, no
   activity held;
4. the `harness.child_ended` local activity reads the child's answer and the usage of the
   run's ended children (`children_usage`, written with the next batch), then
   `child_finished`.

A cancel of the parent while it waits says who cancels (`cancelling`: the parent, as
embedded) and cancels the child's workflow, whose `run_cancelled` is written before the
parent's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, Final

from temporalio import workflow
from temporalio.workflow import ChildWorkflowHandle, ParentClosePolicy

from harness.core.codec import usage_from_dict
from harness.core.events import ChildFinished, ChildStarted, summarize
from harness.core.states import TERMINAL_STATES
from harness.errors import RunInterrupted, ToolError
from harness.tools.context import ToolContext, ToolResult

from ._local import store_call
from ._sink import WorkflowSink

__all__ = ["CHILD_ENDED", "START_CHILD", "WorkflowChildren"]

START_CHILD: Final = "harness.start_child"
SERIAL_STARTS: Final = "serial-child-starts"
"""The patch that made parallel agent-tool calls start their children one at a time."""
CHILD_ENDED: Final = "harness.child_ended"


class WorkflowChildren:
    """The `ChildRuns` of one run's workflow.

    Args:
        run_id: The run.
        key: The run's agent now (its `AgentKey` as a dict), read at each call.
        sink: The run's sink.
        start: The child's workflow's name and first argument, given its run id.
        cancelled: Whether the run is being cancelled.
        paused: Whether a wait ends because the run pauses (the child pauses too; the
            call waits for it again on resume).
    """

    def __init__(
        self,
        run_id: str,
        *,
        key: Callable[[], dict[str, Any]],
        sink: WorkflowSink,
        start: Callable[[str], tuple[str, dict[str, Any]]],
        cancelled: Callable[[], bool],
        paused: Callable[[], bool],
    ) -> None:
        self._run_id, self._key, self._sink = run_id, key, sink
        self._start, self._cancelled, self._paused = start, cancelled, paused
        self._handles: dict[str, ChildWorkflowHandle[Any, Any]] = {}
        """The child workflows this workflow started, by run id (waited for again after a
        pause of this run)."""
        self._starting = asyncio.Lock()
        """Parallel calls count their children and make their rows one at a time, as
        embedded: two calls at `max_children - 1` would otherwise both start one."""

    def in_flight(self) -> bool:
        """Whether a child workflow this one started has not ended (a pause left it waiting)."""
        return any(not handle.done() for handle in self._handles.values())

    async def run(self, agent: Any, task: str, context: ToolContext) -> ToolResult:
        """Run `agent` on `task` as a child workflow and answer with its result.

        Raises:
            ToolError: The child failed or was cancelled, or a limit refused it.
        """
        name = agent if isinstance(agent, str) else str(agent.name)
        start = {
            "run_id": self._run_id,
            "key": self._key(),
            "agent": name,
            "task": task,
            "call_id": context.call_id,
        }
        if workflow.patched(SERIAL_STARTS):
            async with self._starting:
                made = await store_call(START_CHILD, start)
        else:  # a run started before the patch replays its parallel starts
            made = await store_call(START_CHILD, start)
        if "error" in made:
            raise ToolError(str(made["error"]), hint=made.get("hint"))
        child_id = str(made["child_run_id"])
        self._sink.emit(
            ChildStarted(
                call_id=context.call_id,
                child_run_id=child_id,
                agent=str(made["agent"]),
                task=summarize(task),
                depth=int(made["depth"]),
                existed=bool(made["existed"]),
            )
        )
        ended_now = made["state"] in TERMINAL_STATES
        waiting = f"waiting for child run {child_id}"
        await context.park(waiting, self._wait(child_id, ended_now, context.timeout_s))
        ended = await store_call(CHILD_ENDED, {"run_id": self._run_id, "child_run_id": child_id})
        self._sink.report_children_usage(usage_from_dict(ended["children_usage"]))
        self._sink.emit(
            ChildFinished(
                call_id=context.call_id,
                child_run_id=child_id,
                state=str(ended["state"]),
                termination=ended.get("termination"),
                usage=usage_from_dict(ended["usage"]),
            )
        )
        if "error" in ended:
            raise ToolError(str(ended["error"]), hint=ended.get("hint"))
        return ToolResult(text=str(ended["text"]), metadata=ended.get("metadata") or {})

    async def _wait(self, child_id: str, ended: bool, timeout_s: float | None) -> None:
        """The call and its wait on record, then the child's workflow to its end."""
        await self._sink.flush()
        if ended:
            return
        handle = self._handles.get(child_id)
        if handle is None:
            workflow_name, start = self._start(child_id)
            handle = self._handles[child_id] = await workflow.start_child_workflow(
                workflow_name,
                start,
                id=child_id,
                task_queue=workflow.info().task_queue,
                parent_close_policy=ParentClosePolicy.REQUEST_CANCEL,
            )
        elif not handle.done():  # this run was paused while it waited: so was the child
            with contextlib.suppress(Exception):  # it ended meanwhile: nothing to resume
                await handle.signal("resume")
        try:
            await workflow.wait_condition(lambda: handle.done() or self._paused())
            if not handle.done():
                with contextlib.suppress(Exception):  # it ended meanwhile: it is awaited again
                    await handle.signal("pause")
                raise RunInterrupted(f"run {self._run_id} paused while it waited for {child_id}")
            await asyncio.shield(handle)
        except asyncio.CancelledError:
            if not handle.done():
                reason = (
                    f"its parent {self._run_id} was cancelled"
                    if self._cancelled()
                    else f"the call waiting for it timed out after {timeout_s or 0.0:g} s"
                )
                who = {"by": f"run:{self._run_id}", "reason": reason}
                with contextlib.suppress(Exception):
                    await handle.signal("cancelling", who)
                handle.cancel()
                with contextlib.suppress(BaseException):
                    await handle
            raise
