"""Errors of the run store.

They belong under `HarnessError` in the tree of `harness.errors`:

```text
HarnessError
└── StoreError                       the run store failed (retryable as data)
    └── StoreConflict                a write's condition did not hold; nothing was written
```
"""

from __future__ import annotations

from harness.errors import HarnessError

__all__ = ["StoreConflict", "StoreError"]


class StoreError(HarnessError):
    """The run store could not read or write: locked, unreachable, or newer than this code.

    A write that fails with `StoreError` wrote nothing: a step commits whole or not at all.

    Attributes:
        retryable: Whether the same call may succeed later (a lock released, a server back).
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable


class StoreConflict(StoreError):
    """A write's condition did not hold, so nothing was written.

    The run does not exist or already exists, is not in an expected state, or is leased
    to another owner.
    """
