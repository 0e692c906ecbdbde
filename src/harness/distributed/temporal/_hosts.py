"""The `WorkerHost` of each task queue this process works on (workflows find theirs here)."""

from __future__ import annotations

from harness.distributed.host import WorkerHost

__all__ = ["host_of", "register_host", "unregister_host"]

_HOSTS: dict[str | None, WorkerHost] = {}


def register_host(task_queue: str | None, host: WorkerHost) -> None:
    """Make `host` the runtime of workflows on `task_queue` in this process.

    `None` makes it the runtime of workflows of any other queue (a `Replayer` runs them on a
    task queue of its own).
    """
    _HOSTS[task_queue] = host


def unregister_host(task_queue: str | None, host: WorkerHost) -> None:
    """Forget `host` (a worker that stopped), unless another took its place."""
    if _HOSTS.get(task_queue) is host:
        del _HOSTS[task_queue]


def host_of(task_queue: str) -> WorkerHost:
    """The runtime of workflows on `task_queue`: its own, else the default, else the only one.

    Raises:
        LookupError: No worker of this process serves the queue.
    """
    host = _HOSTS.get(task_queue) or _HOSTS.get(None)
    if host is None and len(_HOSTS) == 1:
        host = next(iter(_HOSTS.values()))
    if host is None:
        raise LookupError(f"no harness worker serves task queue {task_queue!r} in this process")
    return host
