"""The settings of a chaos test's processes (its client and its workers), by backend.

`embedded` is the store under HOME alone; `temporal ADDRESS TASK_QUEUE` runs on the Temporal
server at ADDRESS, through TASK_QUEUE, and writes to the same store.
"""

from pathlib import Path

from harness.runtime import Settings
from harness.runtime.runtime_settings import RuntimeSettings


def settings(home: Path, backend: list[str]) -> Settings:
    """The settings of a process of the chaos test under `home`."""
    match backend:
        case ["embedded"]:
            return Settings(home=home)
        case ["temporal", address, task_queue]:
            runtime = RuntimeSettings(
                backend="temporal", temporal_address=address, task_queue=task_queue
            )
            return Settings(home=home, runtime=runtime)
        case _:
            raise ValueError(f"unknown backend {backend!r}")
