"""The feed of every run's events in commit order, and the cursors of its readers.

SQLite has one writer at a time, and an event's `rowid` is one more than the largest
before it: rowids grow in the order events commit, so the feed is the `events` table in
rowid order and a position is `(0, rowid)`.

PostgreSQL commits many transactions at once, and a number drawn in one that commits
late can be smaller than one already visible: reading "every row after the last one I
saw" would skip it. Each event row carries the id of the transaction that wrote it
(`feed_tx`) and a number of its own (`feed_pos`); a read only takes rows of transactions
older than the oldest one still open (`pg_snapshot_xmin`), which are all over, and goes
through them in `(feed_tx, feed_pos)` order. A transaction started later gets a larger id,
so nothing can commit behind what was read.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Final

from harness.store._rows import RUN_COLUMNS, event_from_body, run_from_row
from harness.store._sql import Db, Dialect, insert_rows, marks
from harness.store.protocol import FeedEntry, FeedPage, FeedPosition

__all__ = ["cursors", "end", "move_cursors", "read", "start_cursors"]

SCAN_ROWS: Final = 20_000
"""Events one read looks through at most, of any type: a reader far behind catches up
in several reads, none of which holds a reader connection long."""

_RUN: Final = ", ".join(f"r.{column.strip()}" for column in RUN_COLUMNS.split(","))
"""The columns of the event's run, read with it (triggers match on them)."""
_PG_HORIZON: Final = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint"


def _postgres(d: Dialect) -> bool:
    return d.name == "postgresql"


def end(db: Db, d: Dialect) -> FeedPosition:
    """The position after every event committed so far."""
    if _postgres(d):
        return FeedPosition(tx=int(db.query(_PG_HORIZON)[0][0]))
    return FeedPosition(pos=int(db.query("SELECT COALESCE(MAX(rowid), 0) FROM events")[0][0]))


def read(db: Db, d: Dialect, after: FeedPosition, types: Sequence[str], limit: int) -> FeedPage:
    """Events of `types` after `after`, in feed order; see `EventStore.read_feed`."""
    stop = _stop(db, d, after)
    if stop <= after or not types:
        return FeedPage(entries=(), end=max(stop, after))
    kinds = marks(len(types))
    if _postgres(d):
        rows = db.query(
            f"SELECT e.feed_tx, e.feed_pos, e.body, {_RUN} FROM events e JOIN runs r "
            "ON r.run_id = e.run_id WHERE (e.feed_tx, e.feed_pos) > (?, ?) "
            f"AND (e.feed_tx, e.feed_pos) <= (?, ?) AND e.type IN ({kinds}) "
            "ORDER BY e.feed_tx, e.feed_pos LIMIT ?",
            (after.tx, after.pos, stop.tx, stop.pos, *types, limit),
        )
    else:
        rows = db.query(
            f"SELECT 0, e.rowid, e.body, {_RUN} FROM events e JOIN runs r "
            "ON r.run_id = e.run_id WHERE e.rowid > ? AND e.rowid <= ? "
            f"AND e.type IN ({kinds}) ORDER BY e.rowid LIMIT ?",
            (after.pos, stop.pos, *types, limit),
        )
    entries = tuple(
        FeedEntry(
            position=FeedPosition(tx=int(row[0]), pos=int(row[1])),
            event=event_from_body(row[2]),
            run=run_from_row(row[3:]),
        )
        for row in rows
    )
    full = len(entries) == limit
    return FeedPage(entries=entries, end=entries[-1].position if full else stop)


def _stop(db: Db, d: Dialect, after: FeedPosition) -> FeedPosition:
    """How far one read goes: the feed's end, or `SCAN_ROWS` events after `after`."""
    if not _postgres(d):
        top = int(db.query("SELECT COALESCE(MAX(rowid), 0) FROM events")[0][0])
        return FeedPosition(pos=min(top, after.pos + SCAN_ROWS))
    horizon = FeedPosition(tx=int(db.query(_PG_HORIZON)[0][0]))
    far = db.query(
        "SELECT feed_tx, feed_pos FROM events WHERE (feed_tx, feed_pos) > (?, ?) "
        "AND feed_tx < ? ORDER BY feed_tx, feed_pos LIMIT 1 OFFSET ?",
        (after.tx, after.pos, horizon.tx, SCAN_ROWS - 1),
    )
    return FeedPosition(tx=int(far[0][0]), pos=int(far[0][1])) if far else horizon


def cursors(db: Db, names: Collection[str] | None) -> dict[str, FeedPosition]:
    """The stored cursors among `names`, or all of them (`None`), by name."""
    if names is None:
        rows = db.query("SELECT name, tx, pos FROM feed_cursors ORDER BY name")
    elif not names:
        return {}
    else:
        rows = db.query(
            f"SELECT name, tx, pos FROM feed_cursors WHERE name IN ({marks(len(names))})",
            tuple(names),
        )
    return {str(name): FeedPosition(tx=int(tx), pos=int(pos)) for name, tx, pos in rows}


def start_cursors(db: Db, positions: Mapping[str, FeedPosition], now: float) -> None:
    """Store the cursors not stored yet; the others keep their positions."""
    if positions:
        rows = [(name, p.tx, p.pos, now) for name, p in sorted(positions.items())]
        insert_rows(
            db,
            "INSERT INTO feed_cursors (name, tx, pos, updated_at)",
            rows,
            " ON CONFLICT (name) DO NOTHING",
        )


def move_cursors(db: Db, positions: Mapping[str, FeedPosition], now: float) -> None:
    """Move each cursor forward to its position; one behind it stays where it is."""
    for name, p in sorted(positions.items()):
        db.execute(
            "INSERT INTO feed_cursors (name, tx, pos, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET tx = excluded.tx, pos = excluded.pos, "
            "updated_at = excluded.updated_at "
            "WHERE (excluded.tx, excluded.pos) > (feed_cursors.tx, feed_cursors.pos)",
            (name, p.tx, p.pos, now),
        )
