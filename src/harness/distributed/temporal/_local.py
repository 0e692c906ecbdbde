"""The workflow's local activities: store reads and writes on the worker that runs it.

Each is retried with the same policy (the writes are keyed, so a retry writes nothing
twice) and bounded by the same timeout; one helper keeps them alike.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

from temporalio import workflow
from temporalio.common import RetryPolicy

__all__ = ["STORE_RETRY", "store_call"]

STORE_RETRY: Final = RetryPolicy(
    initial_interval=timedelta(seconds=0.5),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=20,
)
"""Store reads and keyed writes: retried for about three minutes."""

_TIMEOUT: Final = timedelta(seconds=60)


async def store_call(name: str, argument: Any) -> Any:
    """Run the local activity `name` on `argument` and return what it answers."""
    return await workflow.execute_local_activity(
        name, argument, start_to_close_timeout=_TIMEOUT, retry_policy=STORE_RETRY
    )
