"""The states of a run: one definition, shared by the store and the runtime.

The moves between them are the runtime's (`harness.runtime.lifecycle`); the store keeps a
run's state and refuses any name not listed here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = [
    "CLAIMABLE_STATES",
    "RUN_STATES",
    "TEMPORAL_LEASE_S",
    "TEMPORAL_OWNER",
    "TERMINAL_STATES",
    "RunState",
]


class RunState(StrEnum):
    """Where a run is in its life."""

    PENDING = "PENDING"
    """Queued: waiting for a process to claim it."""
    RUNNING = "RUNNING"
    """A process executes it."""
    WAITING_TOOL = "WAITING_TOOL"
    """A tool call waits for a person's decision."""
    PAUSED = "PAUSED"
    """Stopped at a step boundary until it is resumed."""
    COMPLETED = "COMPLETED"
    """Ended with an answer or at a stop condition."""
    FAILED = "FAILED"
    """Ended with an error."""
    CANCELLED = "CANCELLED"
    """Cancelled."""


RUN_STATES: Final[frozenset[RunState]] = frozenset(RunState)
"""Every state. The store accepts these names (members or plain strings) and no other."""

TERMINAL_STATES: Final[frozenset[RunState]] = frozenset(
    {RunState.COMPLETED, RunState.FAILED, RunState.CANCELLED}
)
"""States a run never leaves. Entering one stamps `finished_at`."""

CLAIMABLE_STATES: Final[frozenset[RunState]] = frozenset(
    {RunState.PENDING, RunState.RUNNING, RunState.WAITING_TOOL}
)
"""States `claim` takes by default: runs waiting to start, and runs of a dead owner."""

TEMPORAL_OWNER: Final = "temporal"
"""The lease owner of every run executed on Temporal (`[runtime] backend = "temporal"`).

Its lease never runs out, so no embedded process claims such a run or takes it over: their
claims want a run with no owner, their own, or an expired lease.
"""

TEMPORAL_LEASE_S: Final = 1e9
"""The lease of a run on Temporal: about 31 years, never renewed and never running out."""
