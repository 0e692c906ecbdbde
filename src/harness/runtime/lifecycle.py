"""The run lifecycle: exactly these states, and one table of the moves between them.

```text
PENDING ──▶ RUNNING ──▶ COMPLETED | FAILED | CANCELLED
   │           │  ▲
   │           ▼  │
   │       WAITING_TOOL ──▶ PAUSED | FAILED | CANCELLED
   │           │
   │           ▼
   │        PAUSED ──▶ PENDING | CANCELLED
   ▼
CANCELLED
```
"""

from __future__ import annotations

from typing import Final

from harness.core.states import RunState
from harness.errors import InvalidTransition

__all__ = ["TRANSITIONS", "RunState", "check_transition"]

_S = RunState

TRANSITIONS: Final[dict[RunState, frozenset[RunState]]] = {
    _S.PENDING: frozenset({_S.RUNNING, _S.CANCELLED}),
    _S.RUNNING: frozenset({_S.WAITING_TOOL, _S.PAUSED, _S.COMPLETED, _S.FAILED, _S.CANCELLED}),
    _S.WAITING_TOOL: frozenset({_S.RUNNING, _S.PAUSED, _S.FAILED, _S.CANCELLED}),
    _S.PAUSED: frozenset({_S.PENDING, _S.CANCELLED}),
    _S.COMPLETED: frozenset(),
    _S.FAILED: frozenset(),
    _S.CANCELLED: frozenset(),
}
"""Every allowed move; any other raises `InvalidTransition`."""


def check_transition(run_id: str, current: RunState, target: RunState, *, verb: str) -> None:
    """Raise `InvalidTransition` unless `current → target` is in the table.

    Args:
        run_id: The run, for the message.
        current: Its state now.
        target: The state the move leads to.
        verb: What was asked, e.g. `pause`, for the message.

    Raises:
        InvalidTransition: e.g. "cannot pause run R: it is COMPLETED".
    """
    if target not in TRANSITIONS[current]:
        raise InvalidTransition(f"cannot {verb} run {run_id}: it is {current.value}")
