"""`max_queue` checked at submit without counting the store's waiting runs every time."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from harness.errors import RunQueueFull

__all__ = ["QueueBound"]


class QueueBound:
    """How many runs wait (PENDING) in the store, as `Harness.submit` needs to know it.

    Counting them costs time in proportion to how many there are: at 10,000 waiting, a
    submit cost 1.2 ms more than with none. So the count is taken again only when the last
    one, plus the runs this process queued since, leaves room for one run or none, or when
    it is older than `max_age_s`; otherwise that sum stands in for it. A refusal always
    rests on a fresh count. Other processes' submits can take the queue past the bound by
    what they queued in the last `max_age_s`, and submits awaited together here by how many
    of them there are (counting at every submit, they could by the second: the count and
    the insert were never one transaction).

    Args:
        limit: The bound (`max_queue`).
        max_age_s: The oldest count used.
    """

    def __init__(self, limit: int, *, max_age_s: float = 1.0) -> None:
        self.limit = limit
        self._near = limit - 1
        self._max_age_s = max_age_s
        self._known: int | None = None
        self._counted_at = 0.0

    async def check(self, count: Callable[[], Awaitable[int]]) -> None:
        """Pass when one more run may wait; `count` counts the waiting runs in the store.

        Raises:
            RunQueueFull: `limit` runs wait already (by a count just taken).
        """
        now = time.monotonic()
        known = self._known
        if known is None or known >= self._near or now - self._counted_at > self._max_age_s:
            known = self._known = await count()
            self._counted_at = now
        if known >= self.limit:
            raise RunQueueFull(
                f"{known} runs are already waiting (max_queue={self.limit}); "
                "submit later, or raise max_queue / the concurrency limits"
            )

    def queued(self) -> None:
        """This process queued one more run."""
        if self._known is not None:
            self._known += 1
