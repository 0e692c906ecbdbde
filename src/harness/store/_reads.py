"""The store's reads: each one query (or a few) on a reader connection."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Final

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
from harness.store.protocol import RUN_STATES, TERMINAL_STATES, MessageTokens, RunRecord

__all__ = [
    "RunFilter",
    "audit",
    "count_events",
    "events",
    "events_of_runs",
    "expired_runs",
    "get_blob",
    "get_run",
    "lease_expires_in",
    "list_runs",
    "message_tokens",
    "messages",
    "messages_of_runs",
    "schema_version",
]

_IDS_PER_QUERY: Final = 500
"""Run ids per statement: well under SQLite's and PostgreSQL's parameter limits."""


def get_run(db: Db, run_id: str) -> RunRecord | None:
    """The run, or `None`."""
    rows = db.query(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,))
    return run_from_row(rows[0]) if rows else None


@dataclass(frozen=True, kw_only=True, slots=True)
class RunFilter:
    """What `list_runs` selects: runs that match every field given (`None` matches all)."""

    states: Collection[str] | None = None
    """In one of these states."""
    agent: str | None = None
    """Of this agent."""
    owner: str | None = None
    """Leased to this owner."""
    since: float | None = None
    """Created at or after this time."""
    until: float | None = None
    """Created before this time."""
    task_type: str | None = None
    """Of this task type."""
    experiment: str | None = None
    """Taking part in this experiment."""
    before: tuple[float, str] | None = None
    """After this `(created_at, run_id)` in the listing's order (newest first): a page's end."""
    parent_run_id: str | None = None
    """A child of this run."""
    root_run_id: str | None = None
    """Below this root, at any depth."""


def list_runs(db: Db, where: RunFilter, *, limit: int | None) -> list[RunRecord]:
    """Runs matching every filter given, newest first; all of them when `limit` is `None`."""
    clauses: list[str] = []
    params: list[object] = []
    if where.states is not None:
        clauses.append(f"state IN ({marks(len(where.states))})" if where.states else "1 = 0")
        params.extend(str(state) for state in where.states)  # plain text for the driver
    for clause, value in (
        ("agent = ?", where.agent),
        ("owner = ?", where.owner),
        ("created_at >= ?", where.since),
        ("created_at < ?", where.until),
        ("task_type = ?", where.task_type),
        ("experiment = ?", where.experiment),
        ("parent_run_id = ?", where.parent_run_id),
        ("root_run_id = ?", where.root_run_id),
    ):
        if value is not None:
            clauses.append(clause)
            params.append(value)
    if where.before is not None:
        created, run_id = where.before
        clauses.append("(created_at, run_id) < (?, ?)")  # a range of the listing's indexes
        params.extend((created, run_id))
    sql = f"SELECT {RUN_COLUMNS} FROM runs"
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    sql += " ORDER BY created_at DESC, run_id DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return [run_from_row(row) for row in db.query(sql, params)]


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


def messages_of_runs(db: Db, run_ids: Sequence[str]) -> dict[str, list[Message]]:
    """The messages of `run_ids`, by run, in order; a run without any maps to `[]`.

    One query per `_IDS_PER_QUERY` runs, as `events_of_runs`.
    """
    found: dict[str, list[Message]] = {run_id: [] for run_id in run_ids}
    for ids in _chunks(run_ids):
        rows = db.query(
            f"SELECT run_id, body FROM messages WHERE run_id IN ({marks(len(ids))}) "
            "ORDER BY run_id, seq",
            tuple(ids),
        )
        for run_id, body in rows:
            found[run_id].append(message_from_body(body))
    return found


def events_of_runs(db: Db, run_ids: Sequence[str], types: Sequence[str] | None) -> list[RunEvent]:
    """The events of `run_ids` (of `types` only, when given), by run id then seq.

    One query per `_IDS_PER_QUERY` runs keeps every statement under the databases'
    parameter limits.
    """
    if types is not None and not types:
        return []
    kinds = "" if types is None else f" AND type IN ({marks(len(types))})"
    found: list[RunEvent] = []
    for ids in _chunks(run_ids):
        rows = db.query(
            f"SELECT body FROM events WHERE run_id IN ({marks(len(ids))}){kinds} "
            "ORDER BY run_id, seq",
            (*ids, *(types or ())),
        )
        found.extend(event_from_body(row[0]) for row in rows)
    return found


def count_events(db: Db, run_ids: Sequence[str], types: Sequence[str]) -> dict[str, int]:
    """How many events of `types` each of `run_ids` has (none: left out), nothing decoded."""
    counts: dict[str, int] = {}
    if not types:
        return counts
    for ids in _chunks(run_ids):
        rows = db.query(
            f"SELECT run_id, count(*) FROM events WHERE run_id IN ({marks(len(ids))}) "
            f"AND type IN ({marks(len(types))}) GROUP BY run_id",
            (*ids, *types),
        )
        counts.update((str(row[0]), int(row[1])) for row in rows)
    return counts


def message_tokens(
    db: Db, run_ids: Sequence[str], roles: Sequence[str] | None
) -> list[MessageTokens]:
    """The sizes of the messages of `run_ids` (of `roles` only, when given), by run and `seq`."""
    if roles is not None and not roles:
        return []
    found: list[MessageTokens] = []
    for ids in _chunks(run_ids):
        sql = (
            "SELECT run_id, seq, role, tool_call_id, tokens, tokens_source FROM messages "
            f"WHERE run_id IN ({marks(len(ids))})"
        )
        if roles is not None:
            sql += f" AND role IN ({marks(len(roles))})"
        rows = db.query(sql + " ORDER BY run_id, seq", (*ids, *(roles or ())))
        found.extend(
            MessageTokens(
                run_id=row[0],
                seq=int(row[1]),
                role=str(row[2]),
                tool_call_id=row[3],
                tokens=None if row[4] is None else int(row[4]),
                tokens_source=row[5],
            )
            for row in rows
        )
    return found


def _chunks(run_ids: Sequence[str]) -> list[Sequence[str]]:
    """`run_ids`, sorted and each once, in slices small enough for one statement."""
    ids = sorted(set(run_ids))
    return [ids[i : i + _IDS_PER_QUERY] for i in range(0, len(ids), _IDS_PER_QUERY)]


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
    """Started, unfinished runs whose lease ran out or was given up; the longest expired first.

    The unfinished states are named (not "not finished"), so that the query visits those
    runs only, by the state index, however many finished runs the table holds.
    """
    rows = db.query(
        f"SELECT {RUN_COLUMNS} FROM runs WHERE state IN ({marks(len(_UNFINISHED))}) "
        "AND ((owner IS NOT NULL AND lease_expires_at <= ?) "
        "OR (owner IS NULL AND state IN ('RUNNING', 'WAITING_TOOL'))) "
        "ORDER BY lease_expires_at, run_id",
        (*_UNFINISHED, now),
    )
    return [run_from_row(row) for row in rows]


def lease_expires_in(db: Db, owner: str, now: float) -> float | None:
    """Seconds until the next lease of another owner on an unfinished run runs out."""
    rows = db.query(
        "SELECT MIN(lease_expires_at) FROM runs "
        f"WHERE state IN ({marks(len(_UNFINISHED))}) AND owner <> ? AND lease_expires_at > ?",
        (*_UNFINISHED, owner, now),
    )
    first = rows[0][0] if rows else None
    return None if first is None else float(first) - now


_UNFINISHED: Final = tuple(sorted(str(state) for state in RUN_STATES - TERMINAL_STATES))
"""The states a run can leave, by name."""


def schema_version(db: Db) -> int:
    """The last migration applied."""
    return int(db.query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")[0][0])
