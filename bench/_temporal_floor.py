"""The engine's own floor for bench/temporal.py: a workflow of N no-op activities.

Kept in a module of its own (not the script) because Temporal's workflow sandbox imports
the workflow's module again: it must be importable without side effects.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn(name="bench.noop")
async def noop() -> None:
    return None


@workflow.defn(name="bench.noop_run", sandboxed=True)
class NoopRun:
    @workflow.run
    async def run(self, activities: int) -> int:
        for _ in range(activities):
            await workflow.execute_activity(noop, start_to_close_timeout=timedelta(seconds=60))
        return activities


@workflow.defn(name="bench.noop_run_plain", sandboxed=False)
class NoopRunPlain:
    """The same, outside the sandbox (as harness's workflow runs)."""

    @workflow.run
    async def run(self, activities: int) -> int:
        for _ in range(activities):
            await workflow.execute_activity(noop, start_to_close_timeout=timedelta(seconds=60))
        return activities
