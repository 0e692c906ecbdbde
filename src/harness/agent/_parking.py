"""Parking tool calls: a run waits for something outside it without holding a worker.

`RunParking` is the `Parking` of one run (`ToolContext.park`). A parked call reports
`run_waiting` (the run is WAITING_TOOL), commits the step so far (a restart sees the
call started), and lets the runtime's `WorkerSlot` give its slot to another run. When
the wait is over the run takes a slot back (before it does anything more) and reports
`wait_ended`; it is RUNNING again once no other call of its step waits. The slot goes
when the first call of the run parks and comes back before the last one goes on.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable
from typing import Protocol, TypeVar

from harness.core.events import RunSink, RunWaiting, WaitEnded
from harness.errors import RunInterrupted

__all__ = ["RunParking", "WorkerSlot"]

T = TypeVar("T")


class WorkerSlot(Protocol):
    """The runtime's side of parking: the run's worker slot, and pauses while parked."""

    def give_up(self) -> None:
        """The run waits: its slot may go to another run until `take_back`."""
        ...

    async def take_back(self) -> None:
        """Wait for a slot again (runs woken from a wait before new runs, oldest first)."""
        ...

    async def hold(self, until: Awaitable[T]) -> T:
        """Await `until`, unless a pause comes first.

        Raises:
            RunInterrupted: A pause was asked for before `until` was done.
        """
        ...


class RunParking:
    """Parks the tool calls of one run. See the module docstring.

    Every run has one, most never park: it is slotted, and makes its lock when needed.

    Args:
        sink: Receives `run_waiting` and `wait_ended`; its `commit` (not a pause point)
            records the wait.
        slot: The runtime's slot of the run; `None` (no runtime) only reports the wait.
    """

    __slots__ = ("_away", "_committing", "_parked", "_sink", "_slot", "step")

    def __init__(self, sink: RunSink, slot: WorkerSlot | None = None) -> None:
        self._sink, self._slot = sink, slot
        self.step = 0
        """The step whose calls run now (set by the tool call runner)."""
        self._parked = 0
        self._away = False
        """The run's slot is given up (while any of its calls is parked)."""
        self._committing: asyncio.Lock | None = None
        """Parallel calls that park commit one after another (a sink commits one at a time);
        made by the first call that parks."""

    async def park(self, call_id: str, reason: str, until: Awaitable[T]) -> T:
        """Wait for `until` with the run WAITING_TOOL and its worker slot given up."""
        step, started = self.step, time.monotonic()
        self._sink.emit(RunWaiting(step=step, reason=reason, call_id=call_id))
        self._parked += 1
        goes_on = False  # a pause or a cancel ends the run's execution: no slot to take back
        try:
            try:
                async with self._lock():  # the call is on record before the slot goes
                    await self._sink.commit()
            except BaseException:
                _close(until)  # never awaited: a cancel or a failed write came first
                raise
            result = await self._wait(until)
            goes_on = True
        except RunInterrupted:
            raise
        except Exception:
            goes_on = True  # the wait failed: the call goes on with its error
            raise
        finally:
            self._parked -= 1
            if goes_on and self._away and self._parked == 0:
                self._away = False
                assert self._slot is not None
                await self._slot.take_back()
            waited = round(time.monotonic() - started, 6)
            self._sink.emit(
                WaitEnded(
                    step=step, reason=reason, call_id=call_id, waited_s=waited, waiting=self._parked
                )
            )
        if self._parked == 0:
            async with self._lock():  # RUNNING again, on record
                await self._sink.commit()
        return result

    def _lock(self) -> asyncio.Lock:
        if self._committing is None:
            self._committing = asyncio.Lock()
        return self._committing

    async def _wait(self, until: Awaitable[T]) -> T:
        if self._slot is None:
            return await until
        if not self._away:
            self._away = True
            self._slot.give_up()
        return await self._slot.hold(until)


def _close(until: Awaitable[object]) -> None:
    """Close `until` if it is a coroutine nobody will await (no "never awaited" warning)."""
    if inspect.iscoroutine(until):
        until.close()
