"""`TriggerEngine`: fires each trigger exactly once per matching event, across processes.

It follows the store's feed of every run's events in commit order (`EventStore.read_feed`)
from a durable cursor per trigger, so events committed by other processes, or while no
process was running, fire too. Exactly once comes from the store, not from the cursor:

    event (run R, seq S) of the type --> the run it starts has the id
    derived_id("run", event ts, trigger name + R + S), and is created with its
    `trigger_fired` event in one transaction; a second start of it (another
    process, or this one again after a crash) is a conflict, and a no-op.

The cursor only says where to read from: it is saved after the runs it fired exist (or
every `save_every_s` while nothing fires), so a crash makes the next process read some
events again, and their runs exist already. An event of a type no trigger waits for is
not even read (the feed is filtered by type in SQL); one of such a type whose run matches
no trigger costs a read of the run's row, and no write.

A local event of a type some trigger waits for wakes the engine at once; other processes'
events come with PostgreSQL's notices, and otherwise at the next poll (`poll_s`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from harness.core.events import EVENT_CLASSES, EventPayload, RunEvent, TriggerFired
from harness.core.ids import derived_id
from harness.errors import HarnessError, StoreConflict
from harness.runtime._trigger_rules import Trigger, chain_of
from harness.store.protocol import EventStore, FeedEntry, FeedPosition, RunRecord

__all__ = ["Firing", "TriggerEngine", "trigger_run_id"]

_log = logging.getLogger(__name__)
_PAGE: Final = 200


@dataclass(frozen=True, kw_only=True, slots=True)
class Firing:
    """One start of a trigger's agent: what `TriggerEngine`'s `start` callback gets."""

    trigger: Trigger
    """The trigger."""
    run_id: str
    """The id of the run to create (derived: a second creation is a conflict)."""
    task: str
    """The run's task, the template filled."""
    metadata: Mapping[str, Any]
    """To keep with the run: `{"trigger": {name, source_run_id, source_seq, chain}}`."""
    event: EventPayload
    """The `trigger_fired` event to create the run with."""


Start = Callable[[Firing], Awaitable[object]]
"""Creates the run of a firing, with its event, in one write; raises `StoreConflict` when
a run with its id exists."""


def trigger_run_id(trigger: str, event: RunEvent) -> str:
    """The id of the run `trigger` starts for `event`: the same in every process."""
    return derived_id("run", event.ts, f"{trigger}\n{event.run_id}\n{event.seq}")


class TriggerEngine:
    """Follows the store's feed and starts a trigger's agent on each event it matches.

    Args:
        store: The store (read when the engine runs: the store may open after).
        start: Creates the run of one firing (the `Harness`'s submit).
        poll_s: How often the feed is read when nothing wakes the engine.
        gather_s: How long after a wake the engine waits before it reads.
        save_every_s: How often cursors move while events flow and nothing fires.
    """

    def __init__(
        self,
        store: Callable[[], EventStore],
        start: Start,
        *,
        poll_s: float = 0.5,
        gather_s: float = 0.05,
        save_every_s: float = 5.0,
    ) -> None:
        self._store_of, self._start = store, start
        self._poll_s, self._gather_s, self._save_every_s = poll_s, gather_s, save_every_s
        self._triggers: dict[str, Trigger] = {}
        self._watched: frozenset[type[EventPayload]] = frozenset()
        self._cursors: dict[str, FeedPosition] = {}
        self._saved: dict[str, FeedPosition] = {}
        self._read_at: FeedPosition | None = None
        self._saved_at = time.monotonic()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failing: dict[str, str] = {}

    @property
    def triggers(self) -> tuple[Trigger, ...]:
        """The triggers, in the order they were added."""
        return tuple(self._triggers.values())

    @property
    def unprepared(self) -> bool:
        """Whether a trigger was added whose cursor is not stored yet (see `prepare`)."""
        return any(name not in self._cursors for name in self._triggers)

    def add(self, trigger: Trigger) -> None:
        """Fire `trigger` from now on (on events after the position its cursor has).

        Raises:
            ConfigError: Another trigger has its name.
        """
        from harness.errors import ConfigError

        if trigger.name in self._triggers:
            raise ConfigError(
                f"a trigger named {trigger.name!r} exists already: give this one another name"
            )
        self._triggers[trigger.name] = trigger
        self._watched = frozenset(EVENT_CLASSES[t.event] for t in self._triggers.values())
        self._wake.set()

    def notice(self, event: RunEvent) -> None:
        """A bus subscriber: an event of a watched type was committed here; read at once."""
        if type(event.payload) in self._watched:
            self._wake.set()

    async def prepare(self) -> None:
        """Store the cursor of every trigger that has none yet, at the feed's end now."""
        await self._start_cursors(self._store_of())

    def start(self) -> None:
        """Run in the background until `stop`."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop, and save how far each trigger got."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        with contextlib.suppress(HarnessError):
            await self._start_cursors(self._store_of())  # a trigger added just before
            await self._save(force=True)

    async def _run(self) -> None:
        seen = 0
        while True:
            try:
                more = await self.step()
            except HarnessError as exc:  # the store is busy or gone: try again next poll
                _log.warning("triggers: %s", exc)
                more = False
            except Exception:  # a bug must not stop every trigger for good
                _log.exception("triggers: reading the feed failed")
                more = False
            if more:
                continue
            seen = await self._wait(seen)

    async def _wait(self, seen: int) -> int:
        """Until woken here, a notice from another process, or the next poll.

        Then `gather_s` more, so that one read takes every event committed meanwhile (a
        burst of runs ending costs a few reads, not one each).
        """
        if not self._wake.is_set():
            woken = asyncio.ensure_future(self._wake.wait())
            notice = asyncio.ensure_future(
                self._store_of().wait_for_notice("events", seen, self._poll_s)
            )
            try:
                await asyncio.wait({woken, notice}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                woken.cancel()
                notice.cancel()
            if notice.done() and not notice.cancelled() and notice.exception() is None:
                seen = notice.result()
        await asyncio.sleep(self._gather_s)
        self._wake.clear()
        return seen

    async def step(self) -> bool:
        """Read the feed once and fire what matches; `True` when there is more to read."""
        store = self._store_of()
        await self._start_cursors(store)
        active = [t for t in self._triggers.values() if t.name in self._cursors]
        if not active:
            return False
        after = min(self._cursors[t.name] for t in active)
        page = await store.read_feed(after, types={t.event for t in active}, limit=_PAGE)
        self._read_at = max(page.end, self._read_at or page.end)
        fired, blocked = await self._fire_all(store, active, page.entries)
        for trigger in active:
            cursor, stop = self._cursors[trigger.name], blocked.get(trigger.name)
            self._cursors[trigger.name] = max(cursor, stop.before() if stop else page.end)
        await self._save(force=fired)
        return len(page.entries) == _PAGE and not blocked

    async def _start_cursors(self, store: EventStore) -> None:
        """Where each new trigger starts: its stored cursor, else here and now."""
        new = [name for name in self._triggers if name not in self._cursors]
        if not new:
            return
        at = self._read_at if self._read_at is not None else await store.feed_end()
        started = await store.start_feed_cursors(dict.fromkeys(new, at))
        self._cursors.update(started)
        self._saved.update(started)

    async def _fire_all(
        self, store: EventStore, triggers: Sequence[Trigger], entries: Collection[FeedEntry]
    ) -> tuple[bool, dict[str, FeedPosition]]:
        """Fire every matching event.

        Returns whether any matched, and where each trigger that could not fire an event
        stopped (that event's position).
        """
        firings: list[tuple[Trigger, FeedEntry]] = []
        for entry in entries:
            for trigger in triggers:
                if entry.position <= self._cursors[trigger.name]:
                    continue
                if trigger.fires_on(entry.event, entry.run):
                    firings.append((trigger, entry))
        outcomes = await asyncio.gather(*(self._fire(store, t, e) for t, e in firings))
        blocked: dict[str, FeedPosition] = {}
        for (trigger, entry), ok in zip(firings, outcomes, strict=True):
            if not ok:
                first = blocked.get(trigger.name)
                blocked[trigger.name] = min(first, entry.position) if first else entry.position
        return bool(firings), blocked

    async def _fire(self, store: EventStore, trigger: Trigger, entry: FeedEntry) -> bool:
        """Start the run of one firing unless it exists; `False` when it could not start."""
        event = entry.event
        run_id = trigger_run_id(trigger.name, event)
        try:
            if await store.get_run(run_id) is not None:
                return True  # fired before (by this process before a crash, or another)
            await self._start(_firing(trigger, run_id, event, entry.run))
        except StoreConflict:
            return True  # another process started it first
        except HarnessError as exc:
            self._report(trigger, str(exc))
            return False
        self._failing.pop(trigger.name, None)
        return True

    def _report(self, trigger: Trigger, problem: str) -> None:
        """Log why a trigger cannot fire, once per problem (it tries again each poll)."""
        if self._failing.get(trigger.name) != problem:
            self._failing[trigger.name] = problem
            _log.error(
                "trigger %r cannot start %r (tried again each poll): %s",
                trigger.name,
                trigger.start,
                problem,
            )

    async def _save(self, *, force: bool) -> None:
        """Move the stored cursors that moved: now when `force`, else every `save_every_s`."""
        moved = {n: p for n, p in self._cursors.items() if self._saved.get(n) != p}
        if not moved:
            return
        if not force and time.monotonic() - self._saved_at < self._save_every_s:
            return
        await self._store_of().move_feed_cursors(moved)
        self._saved.update(moved)
        self._saved_at = time.monotonic()


def _firing(trigger: Trigger, run_id: str, event: RunEvent, run: RunRecord) -> Firing:
    origin = {
        "name": trigger.name,
        "source_run_id": event.run_id,
        "source_seq": event.seq,
        "chain": [*chain_of(run), trigger.name],
    }
    fired = TriggerFired(
        trigger=trigger.name,
        source_run_id=event.run_id,
        source_seq=event.seq,
        source_event=event.type,
    )
    return Firing(
        trigger=trigger,
        run_id=run_id,
        task=trigger.render(event, run),
        metadata={"trigger": origin},
        event=fired,
    )
