"""Who owns which run (leases), and the requests other processes send to owners (controls).

A lease is an owner id and an expiry time on the run's row. An owner renews its leases
while it works; when it dies they expire and another process may claim the runs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

from harness.core.states import RUN_STATES, RunState
from harness.store._notices import notify
from harness.store._rows import CONTROL_COLUMNS, RUN_COLUMNS, control_from_row, run_from_row, wrap
from harness.store._sql import Db, Dialect, Row, marks
from harness.store.errors import StoreConflict
from harness.store.protocol import Control, ControlKind, RunRecord

__all__ = ["claim", "claim_sql", "release", "renew", "send_control", "start", "take_controls"]

_OWNER: Final = RUN_COLUMNS.split(", ").index("owner")
"""Where `owner` is in a row of `RUN_COLUMNS`; `lease_expires_at` follows it."""


def claim(
    db: Db,
    d: Dialect,
    owner: str,
    *,
    lease_s: float,
    run_ids: Collection[str] | None,
    states: Collection[str],
    limit: int,
    now: float,
) -> list[RunRecord]:
    """Lease to `owner` the runs in `states` that are free, expired, or already its own.

    Two statements however many runs: one reads the rows to take, in claim order, locking
    them (PostgreSQL skips rows another claimer holds); one leases them all.
    """
    if not states or (run_ids is not None and not run_ids) or limit <= 0:
        return []
    sql = claim_sql(states, None if run_ids is None else len(run_ids)) + d.skip_locked
    rows = db.query(sql, (owner, now, *(run_ids or ()), limit))
    if not rows:
        return []
    lease = now + lease_s
    db.execute(
        f"UPDATE runs SET owner = ?, lease_expires_at = ? WHERE run_id IN ({marks(len(rows))})",
        (owner, lease, *(row[0] for row in rows)),
    )
    return [_leased(row, owner, lease) for row in rows]


def claim_sql(states: Collection[str], ids: int | None) -> str:
    """The SELECT of `claim` (before the dialect's `skip_locked`).

    Its parameters: owner, now, `ids` run ids (when not `None`), limit.
    """
    sql = (
        f"SELECT {RUN_COLUMNS} FROM runs WHERE {_in_states(states)} "
        "AND (owner IS NULL OR owner = ? OR lease_expires_at <= ?)"
    )
    if ids is not None:
        sql += f" AND run_id IN ({marks(ids)})"
    return sql + " ORDER BY priority DESC, created_at, run_id LIMIT ?"


def _in_states(states: Collection[str]) -> str:
    """`state = 'PENDING'` or `state IN (…)`, the states written out.

    As literals, and one state with `=`, so that the planners of SQLite and PostgreSQL
    (a generic plan too) see that the claim of queued runs reads `runs_claim_order`,
    which holds the PENDING runs only. Only names of `RUN_STATES` are written, never
    text from outside: a state that is none of them matches no run, here as before.
    """
    names = sorted(str(state) for state in set(states) if state in RUN_STATES)
    if len(names) == 1:
        return f"state = '{names[0]}'"
    quoted = ", ".join(f"'{name}'" for name in names)
    return f"state IN ({quoted})" if names else "1 = 0"


def _leased(row: Row, owner: str, lease: float) -> RunRecord:
    """The run of `row` as it is once leased to `owner`, naming who held it before."""
    taken = (*row[:_OWNER], owner, lease, *row[_OWNER + 2 :])
    return run_from_row(taken, previous_owner=row[_OWNER])


def start(db: Db, owner: str, run_ids: Collection[str], now: float) -> list[str]:
    """Move the PENDING runs among `run_ids` that `owner` holds to RUNNING, in one statement.

    Returns the ids moved (in no order); a run cancelled, or taken by another owner, since
    its claim is left as it is.
    """
    if not run_ids:
        return []
    rows = db.query(
        "UPDATE runs SET state = ?, started_at = COALESCE(started_at, ?), updated_at = ? "
        f"WHERE state = ? AND owner = ? AND run_id IN ({marks(len(run_ids))}) RETURNING run_id",
        (str(RunState.RUNNING), now, now, str(RunState.PENDING), owner, *run_ids),
    )
    return [row[0] for row in rows]


def renew(db: Db, owner: str, run_ids: Collection[str], *, lease_s: float, now: float) -> list[str]:
    """Extend `owner`'s leases on `run_ids`, in one statement; returns the ids it still holds."""
    if not run_ids:
        return []
    rows = db.query(
        f"UPDATE runs SET lease_expires_at = ? WHERE owner = ? "
        f"AND run_id IN ({marks(len(run_ids))}) RETURNING run_id",
        (now + lease_s, owner, *run_ids),
    )
    return sorted(row[0] for row in rows)


def release(db: Db, owner: str, run_ids: Collection[str] | None) -> None:
    """Clear `owner`'s leases on `run_ids`, or on every run it holds."""
    sql = "UPDATE runs SET owner = NULL, lease_expires_at = NULL WHERE owner = ?"
    if run_ids is None:
        db.execute(sql, (owner,))
    elif run_ids:
        db.execute(f"{sql} AND run_id IN ({marks(len(run_ids))})", (owner, *run_ids))


def send_control(
    db: Db, d: Dialect, run_id: str, kind: ControlKind, payload: Mapping[str, Any], now: float
) -> int:
    """Queue a control for the run's owner; returns its id."""
    if not db.query("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)):
        raise StoreConflict(f"there is no run {run_id}")
    body = wrap(payload, f"the payload of control {kind} for run {run_id}")
    rows = db.query(
        "INSERT INTO controls (run_id, kind, created_at, body) VALUES (?, ?, ?, ?) RETURNING id",
        (run_id, kind, now, body),
    )
    notify(db, d, "controls", run_id)
    return int(rows[0][0])


def take_controls(
    db: Db, *, run_id: str | None, owner: str | None, engine: str | None = None, now: float
) -> list[Control]:
    """Mark the pending controls of a run, an owner's or an engine's runs consumed.

    Returns them, in the order sent.

    A concurrent taker waits for the row locks, then finds the rows consumed: every control
    goes to exactly one caller.
    """
    # From the controls not consumed (index controls_unconsumed, usually none) to their
    # runs: `run_id IN (runs of owner)` looked up every run the owner holds, each poll.
    if run_id is not None:
        scope, key, taker = "run_id = ?", run_id, owner
    elif owner is not None:
        scope = "EXISTS (SELECT 1 FROM runs WHERE runs.run_id = controls.run_id AND owner = ?)"
        key, taker = owner, owner
    elif engine is not None:
        scope = "EXISTS (SELECT 1 FROM runs WHERE runs.run_id = controls.run_id AND engine = ?)"
        key, taker = engine, f"{engine} relay"
    else:
        return []
    rows = db.query(
        "UPDATE controls SET consumed_at = ?, consumed_by = ? "
        f"WHERE consumed_at IS NULL AND {scope} RETURNING {CONTROL_COLUMNS}",
        (now, taker, key),
    )
    return sorted((control_from_row(row) for row in rows), key=lambda c: c.id)
