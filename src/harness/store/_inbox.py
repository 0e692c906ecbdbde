"""Runs' inboxes: messages kept for a run until a step of it delivers them, once.

Posting a message queues a `mail` control for the run's owner in the same transaction, so
the owner learns of it the way it learns of a pause (at once on PostgreSQL's NOTIFY, at
the next poll on SQLite) and reads the inbox only then. Delivery is a column set by the
step that carries the message into the run's history, in that step's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from harness.store._leases import send_control
from harness.store._sql import Db, Dialect, Row, marks
from harness.store.errors import StoreConflict
from harness.store.protocol import TERMINAL_STATES, InboxMessage, NewMail

__all__ = ["inbox", "mark_delivered", "post", "with_mail"]

_COLUMNS: Final = "id, run_id, content, sender, sender_run, sent_at, delivered_at"


def post(db: Db, d: Dialect, mail: NewMail, now: float) -> int:
    """Keep `mail` in its run's inbox and tell the owner; the id of the message kept."""
    rows = db.query("SELECT state FROM runs WHERE run_id = ?", (mail.run_id,))
    if not rows:
        raise StoreConflict(f"there is no run {mail.run_id}")
    if rows[0][0] in TERMINAL_STATES:
        raise StoreConflict(
            f"run {mail.run_id} is {rows[0][0]}: a finished run reads no more messages"
        )
    if mail.key is not None:
        kept = db.query("SELECT id FROM inbox WHERE key = ?", (mail.key,))
        if kept:
            return int(kept[0][0])
    inserted = db.query(
        "INSERT INTO inbox (run_id, sender, sender_run, content, sent_at, key) "
        "VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
        (mail.run_id, mail.sender, mail.sender_run, mail.content, now, mail.key),
    )
    message_id = int(inserted[0][0])
    send_control(db, d, mail.run_id, "mail", {"message_id": message_id}, now)
    return message_id


def mark_delivered(db: Db, run_id: str, ids: Sequence[int], now: float) -> None:
    """Mark the run's messages `ids` delivered now, or fail if any was delivered before."""
    wanted = tuple(dict.fromkeys(ids))
    marked = db.query(
        f"UPDATE inbox SET delivered_at = ? WHERE run_id = ? AND id IN ({marks(len(wanted))}) "
        "AND delivered_at IS NULL RETURNING id",
        (now, run_id, *wanted),
    )
    if len(marked) != len(wanted):
        missing = sorted(set(wanted) - {int(row[0]) for row in marked})
        raise StoreConflict(
            f"messages {missing} of run {run_id}'s inbox were delivered already, or are not its own"
        )


def inbox(db: Db, run_id: str, *, unread: bool) -> list[InboxMessage]:
    """The run's messages, oldest first: those not delivered yet, or all."""
    where = " AND delivered_at IS NULL" if unread else ""
    rows = db.query(f"SELECT {_COLUMNS} FROM inbox WHERE run_id = ?{where} ORDER BY id", (run_id,))
    return [_from_row(row) for row in rows]


def with_mail(db: Db, run_ids: Sequence[str]) -> set[str]:
    """Which of `run_ids` have a message not delivered yet: a few statements for any number."""
    found: set[str] = set()
    for first in range(0, len(run_ids), _IDS_PER_QUERY):
        ids = run_ids[first : first + _IDS_PER_QUERY]
        rows = db.query(
            f"SELECT DISTINCT run_id FROM inbox WHERE run_id IN ({marks(len(ids))}) "
            "AND delivered_at IS NULL",
            tuple(ids),
        )
        found.update(row[0] for row in rows)
    return found


_IDS_PER_QUERY: Final = 500
"""Run ids per statement: well under SQLite's and PostgreSQL's parameter limits."""


def _from_row(row: Row) -> InboxMessage:
    return InboxMessage(
        id=int(row[0]),
        run_id=row[1],
        content=row[2],
        sender=row[3],
        sender_run=row[4],
        sent_at=float(row[5]),
        delivered_at=None if row[6] is None else float(row[6]),
    )
