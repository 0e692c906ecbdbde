"""A Temporal worker of harness runs: the `harness.run` workflow and its activities."""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from datetime import timedelta
from typing import Final

from temporalio.client import Client
from temporalio.worker import Worker

from harness.distributed.host import WorkerHost

from ._hosts import register_host, unregister_host
from .activities import Activities
from .workflow import RunWorkflow

__all__ = ["STICKY_TIMEOUT_S", "RunWorker", "hosted"]

STICKY_TIMEOUT_S: Final = 2.0
"""How long a workflow task waits for the worker that ran the workflow last before any
worker takes it: a dead worker delays its runs by this much, not by the SDK's 10 s."""


@contextlib.contextmanager
def hosted(task_queue: str | None, host: WorkerHost) -> Generator[None]:
    """Make `host` the runtime of `harness.run` workflows of `task_queue` in this process.

    A `RunWorker` does it while it runs. A `Replayer` of a recorded history needs it too,
    with `None` (its workflows run on a task queue of its own): the workflow finds its
    agents through the host.
    """
    register_host(task_queue, host)
    try:
        yield
    finally:
        unregister_host(task_queue, host)


class RunWorker:
    """Executes harness runs from a task queue, with the runtime's agents, models and tools.

    Args:
        client: A connected client (`harness.distributed.temporal.client.connect`).
        host: The runtime's side.
        task_queue: The queue to work on.
        max_concurrent_activities: Model and tool calls run at once by this worker.
    """

    def __init__(
        self,
        client: Client,
        host: WorkerHost,
        *,
        task_queue: str,
        max_concurrent_activities: int = 100,
    ) -> None:
        self._host, self.task_queue = host, task_queue
        self._worker = Worker(
            client,
            task_queue=task_queue,
            workflows=[RunWorkflow],
            activities=Activities(host).all(),
            max_concurrent_activities=max_concurrent_activities,
            sticky_queue_schedule_to_start_timeout=timedelta(seconds=STICKY_TIMEOUT_S),
            graceful_shutdown_timeout=timedelta(seconds=5),
        )

    async def run(self) -> None:
        """Work until `shutdown` (or a cancel of this call)."""
        with hosted(self.task_queue, self._host):
            await self._worker.run()

    async def shutdown(self) -> None:
        """Stop taking work; in-flight activities get a few seconds to end."""
        await self._worker.shutdown()
