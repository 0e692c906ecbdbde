"""The store's reads: each one query (or a few) on a reader connection."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from harness.core.events import RunEvent
from harness.core.messages import Message
from harness.store._rows import (
    RUN_COLUMNS,
    event_from_body,
    message_from_body,
    run_from_row,
    unwrap,
)
from harness.store._sql import Db, marks
from harness.store.protocol import TERMINAL_STATES, RunRecord

__all__ = [
    "audit",
    "events",
    "expired_runs",
    "get_blob",
    "get_run",
    "list_runs",
    "messages",
    "schema_version",
]


def get_run(db: Db, run_id: str) -> RunRecord | None:
    """The run, or `None`."""
    rows = db.query(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,))
    return run_from_row(rows[0]) if rows else None


def list_runs(
    db: Db,
    *,
    states: Collection[str] | None,
    agent: str | None,
    owner: str | None,
    since: float | None,
    until: float | None,
    limit: int,
) -> list[RunRecord]:
    """Runs matching every filter given, newest first."""
    where: list[str] = []
    params: list[object] = []
    if states is not None:
        where.append(f"state IN ({marks(len(states))})" if states else "1 = 0")
        params.extend(str(state) for state in states)  # plain text for the driver
    for clause, value in (
        ("agent = ?", agent),
        ("owner = ?", owner),
        ("created_at >= ?", since),
        ("created_at < ?", until),
    ):
        if value is not None:
            where.append(clause)
            params.append(value)
    sql = f"SELECT {RUN_COLUMNS} FROM runs"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY created_at DESC, run_id DESC LIMIT ?"
    return [run_from_row(row) for row in db.query(sql, (*params, limit))]


def count_runs(db: Db, states: Collection[str]) -> int:
    """How many runs are in one of `states`."""
    if not states:
        return 0
    rows = db.query(
        f"SELECT count(*) FROM runs WHERE state IN ({marks(len(states))})",
        tuple(str(state) for state in states),
    )
    return int(rows[0][0])


def events(db: Db, run_id: str, *, after_seq: int, limit: int | None) -> list[RunEvent]:
    """The run's events after `after_seq`, in order."""
    sql = "SELECT body FROM events WHERE run_id = ? AND seq > ? ORDER BY seq"
    params: tuple[object, ...] = (run_id, after_seq)
    if limit is not None:
        sql += " LIMIT ?"
        params = (*params, limit)
    return [event_from_body(row[0]) for row in db.query(sql, params)]


def messages(db: Db, run_id: str) -> list[Message]:
    """The run's messages, in order."""
    rows = db.query("SELECT body FROM messages WHERE run_id = ? ORDER BY seq", (run_id,))
    return [message_from_body(row[0]) for row in rows]


def get_blob(db: Db, run_id: str, key: str) -> str | None:
    """The text kept under `key`, or `None`."""
    rows = db.query("SELECT body FROM blobs WHERE run_id = ? AND key = ?", (run_id, key))
    return str(unwrap(rows[0][0])) if rows else None


def audit(db: Db, run_id: str | None) -> list[dict[str, Any]]:
    """Audit records, of one run or all, in the order they were kept."""
    if run_id is None:
        rows = db.query("SELECT body FROM audit ORDER BY id")
    else:
        rows = db.query("SELECT body FROM audit WHERE run_id = ? ORDER BY id", (run_id,))
    return [dict(unwrap(row[0])) for row in rows]


def expired_runs(db: Db, now: float) -> list[RunRecord]:
    """Started, unfinished runs whose lease ran out or was given up; the longest expired first."""
    rows = db.query(
        f"SELECT {RUN_COLUMNS} FROM runs WHERE ((owner IS NOT NULL AND lease_expires_at <= ?) "
        "OR (owner IS NULL AND state IN ('RUNNING', 'WAITING_TOOL'))) "
        f"AND state NOT IN ({marks(len(TERMINAL_STATES))}) "
        "ORDER BY lease_expires_at, run_id",
        (now, *sorted(str(state) for state in TERMINAL_STATES)),
    )
    return [run_from_row(row) for row in rows]


def schema_version(db: Db) -> int:
    """The last migration applied."""
    return int(db.query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")[0][0])
