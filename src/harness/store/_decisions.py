"""Decisions on tool calls that wait for approval: the first one recorded wins.

`approve` and `deny` sent at the same moment from two processes race to insert the same
`(run_id, call_id)` row. The loser's insert does nothing (SQLite serializes writers;
PostgreSQL makes the second insert wait for the first transaction, then skip), and it
reads back the decision that stands. Only the winner queues a control for the owner.
"""

from __future__ import annotations

from typing import Final

from harness.store._leases import send_control
from harness.store._sql import Db, Dialect, Row
from harness.store.errors import StoreConflict
from harness.store.protocol import Decision

__all__ = ["decide", "decisions"]

_COLUMNS: Final = "run_id, call_id, approved, decided_by, reason, decided_at"


def decide(db: Db, d: Dialect, decision: Decision, now: float) -> Decision | None:
    """Insert `decision` and queue its control; the earlier decision when there is one."""
    c = decision
    if not db.query("SELECT 1 FROM runs WHERE run_id = ?", (c.run_id,)):
        raise StoreConflict(f"there is no run {c.run_id}")
    won = db.query(
        f"INSERT INTO decisions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (run_id, call_id) DO NOTHING RETURNING call_id",
        (c.run_id, c.call_id, c.approved, c.by, c.reason, now),
    )
    if not won:
        return _decision(db, c.run_id, c.call_id)
    payload = {"call_id": c.call_id, "by": c.by, "reason": c.reason}
    send_control(db, d, c.run_id, "approve" if c.approved else "deny", payload, now)
    return None


def decisions(db: Db, run_id: str) -> list[Decision]:
    """The run's decisions, oldest first."""
    rows = db.query(
        f"SELECT {_COLUMNS} FROM decisions WHERE run_id = ? ORDER BY decided_at, call_id",
        (run_id,),
    )
    return [_from_row(row) for row in rows]


def _decision(db: Db, run_id: str, call_id: str) -> Decision:
    rows = db.query(
        f"SELECT {_COLUMNS} FROM decisions WHERE run_id = ? AND call_id = ?", (run_id, call_id)
    )
    return _from_row(rows[0])


def _from_row(row: Row) -> Decision:
    return Decision(
        run_id=row[0],
        call_id=row[1],
        approved=bool(row[2]),
        by=row[3],
        reason=row[4],
        decided_at=float(row[5]),
    )
