"""Errors of the run store.

They live in `harness.errors`, the one exception tree, and are re-exported here:

```text
HarnessError
└── StoreError                       the run store failed (retryable as data)
    └── StoreConflict                a write's condition did not hold; nothing was written
```
"""

from __future__ import annotations

from harness.errors import StoreConflict, StoreError

__all__ = ["StoreConflict", "StoreError"]
