"""The store's writes, each run inside a transaction that the engine opens and commits.

Every function takes the connection first and `now` (seconds since the epoch) last, and
either completes or raises; the engine then rolls back whatever it began.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness.core.events import RunEvent
from harness.core.messages import Message
from harness.errors import ConfigError
from harness.core.usage import Usage
from harness.store._rows import encode_event, encode_message, encode_usage, event_from_body, wrap
from harness.store._schema import LATEST_VERSION, MIGRATIONS, VERSION_TABLE
from harness.store._sql import Db, Dialect, marks
from harness.store.errors import StoreConflict, StoreError
from harness.store.protocol import (
    TERMINAL_STATES,
    NewEvent,
    NewRun,
    RunState,
    RunUpdate,
    StepWrite,
)

__all__ = ["append", "create_run", "migrate", "record_audit", "transition", "with_state"]


_NO_USAGE = encode_usage(Usage())


@dataclass(frozen=True, slots=True)
class _Locked:
    """The parts of a run's row that a step checks and advances."""

    state: RunState
    owner: str | None
    last_seq: int
    last_message: int


def migrate(db: Db, d: Dialect, now: float) -> int:
    """Apply every migration the database lacks; returns the schema version.

    Raises:
        StoreError: The database was written by a newer harness.
    """
    if d.lock_schema:
        db.execute(d.lock_schema)
    db.execute(VERSION_TABLE)
    current = int(db.query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")[0][0])
    if current > LATEST_VERSION:
        raise StoreError(
            f"the store's schema is version {current}, newer than this harness knows "
            f"({LATEST_VERSION}): upgrade harness to use it"
        )
    for migration in MIGRATIONS:
        if migration.version <= current:
            continue
        for statement in migration.statements:
            db.execute(statement.replace("{id}", d.serial))
        db.execute(
            "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)",
            (migration.version, migration.description, now),
        )
    return LATEST_VERSION


def create_run(
    db: Db,
    d: Dialect,
    run: NewRun,
    events: Sequence[NewEvent],
    messages: Sequence[Message],
    now: float,
) -> list[RunEvent]:
    """Insert a run with its first events and messages."""
    if db.query("SELECT 1 FROM runs WHERE run_id = ?", (run.run_id,)):
        raise StoreConflict(f"run {run.run_id} already exists")
    if run.owner is not None and run.lease_s is None:
        raise ConfigError(f"run {run.run_id} is created with an owner but no lease_s")
    lease = now + run.lease_s if run.owner is not None and run.lease_s is not None else None
    started = now if run.state == "RUNNING" else None
    metadata = _metadata(run.run_id, run.metadata)
    db.execute(
        "INSERT INTO runs (run_id, agent, state, task, parent_run_id, model, priority, "
        "created_at, updated_at, started_at, usage, metadata, owner, lease_expires_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (run.run_id, run.agent, run.state, run.task, run.parent_run_id, run.model,
         run.priority, now, now, started, _NO_USAGE, metadata, run.owner, lease),
    )  # fmt: skip
    locked = _Locked(state=run.state, owner=run.owner, last_seq=0, last_message=0)
    step = StepWrite(run_id=run.run_id, events=events, messages=messages)
    return _write(db, run.run_id, locked, step, now)


def append(db: Db, d: Dialect, step: StepWrite, now: float) -> list[RunEvent]:
    """Write one step, or return what it wrote before when its key was seen already."""
    locked = _lock(db, d, step.run_id)
    if step.key is not None:
        done = db.query(
            "SELECT first_seq, last_seq FROM step_keys WHERE run_id = ? AND key = ?",
            (step.run_id, step.key),
        )
        if done:
            return _events_between(db, step.run_id, int(done[0][0]), int(done[0][1]))
    if step.expect_states is not None and locked.state not in step.expect_states:
        expected = " or ".join(sorted(step.expect_states))
        raise StoreConflict(f"run {step.run_id} is {locked.state}, not {expected}")
    if step.owner is not None and locked.owner != step.owner:
        holder = locked.owner or "nobody"
        raise StoreConflict(f"run {step.run_id} is leased to {holder}, not to {step.owner}")
    events = _write(db, step.run_id, locked, step, now)
    if step.key is not None:
        db.execute(
            "INSERT INTO step_keys (run_id, key, first_seq, last_seq) VALUES (?, ?, ?, ?)",
            (step.run_id, step.key, locked.last_seq + 1, locked.last_seq + len(events)),
        )
    return events


def transition(
    db: Db,
    d: Dialect,
    run_id: str,
    from_states: Collection[RunState],
    step: StepWrite,
    now: float,
) -> list[RunEvent] | None:
    """Write `step` only if the run is in one of `from_states`; `None` when it is not."""
    locked = _lock(db, d, run_id)
    if locked.state not in from_states:
        return None
    return _write(db, run_id, locked, step, now)


def record_audit(db: Db, run_id: str, record: Mapping[str, Any], now: float) -> None:
    """Insert one audit record."""
    body = wrap(record, f"an audit record of run {run_id}")
    db.execute("INSERT INTO audit (run_id, ts, body) VALUES (?, ?, ?)", (run_id, now, body))


def _lock(db: Db, d: Dialect, run_id: str) -> _Locked:
    rows = db.query(
        "SELECT state, owner, last_seq, last_message FROM runs WHERE run_id = ?" + d.for_update,
        (run_id,),
    )
    if not rows:
        raise StoreConflict(f"there is no run {run_id}")
    state, owner, last_seq, last_message = rows[0]
    return _Locked(state=state, owner=owner, last_seq=int(last_seq), last_message=int(last_message))


def _write(db: Db, run_id: str, locked: _Locked, step: StepWrite, now: float) -> list[RunEvent]:
    events = [
        RunEvent(
            run_id=run_id,
            seq=locked.last_seq + i,
            ts=now if new.ts is None else new.ts,
            type=new.type,
            payload=new.payload,
        )
        for i, new in enumerate(step.events, start=1)
    ]
    if events:
        db.executemany(
            "INSERT INTO events (run_id, seq, ts, type, body) VALUES (?, ?, ?, ?, ?)",
            [(run_id, e.seq, e.ts, e.type, encode_event(e)) for e in events],
        )
    if step.messages:
        _insert_messages(db, run_id, locked.last_message, step.messages, now)
    if step.blobs:
        _put_blobs(db, run_id, step.blobs, now)
    _update_run(db, run_id, locked, step, now)
    return events


def _insert_messages(
    db: Db, run_id: str, last: int, messages: Sequence[Message], now: float
) -> None:
    db.executemany(
        "INSERT INTO messages (run_id, seq, role, tool_call_id, tokens, created_at, body) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (run_id, last + i, m.role, m.tool_call_id, m.tokens, now, encode_message(m, run_id))
            for i, m in enumerate(messages, start=1)
        ],
    )


def _put_blobs(db: Db, run_id: str, blobs: Mapping[str, str], now: float) -> None:
    db.executemany(
        "INSERT INTO blobs (run_id, key, created_at, body) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (run_id, key) DO UPDATE SET body = excluded.body, "
        "created_at = excluded.created_at",
        [(run_id, key, now, wrap(text, f"blob {key} of run {run_id}")) for key, text in blobs.items()],
    )


def _update_run(db: Db, run_id: str, locked: _Locked, step: StepWrite, now: float) -> None:
    sets = ["updated_at = ?", "last_seq = ?", "last_message = ?"]
    params: list[object] = [
        now,
        locked.last_seq + len(step.events),
        locked.last_message + len(step.messages),
    ]
    if step.update is not None:
        _update_fields(run_id, step.update, now, sets, params)
    db.execute(f"UPDATE runs SET {', '.join(sets)} WHERE run_id = ?", (*params, run_id))


def _update_fields(
    run_id: str, update: RunUpdate, now: float, sets: list[str], params: list[object]
) -> None:
    if update.state is not None:
        sets.append("state = ?")
        params.append(update.state)
        if update.state == "RUNNING":
            sets.append("started_at = COALESCE(started_at, ?)")
            params.append(now)
        if update.state in TERMINAL_STATES:
            sets.append("finished_at = ?")
            params.append(now)
    if update.usage is not None:
        sets.append("usage = ?")
        params.append(encode_usage(update.usage))
    if update.metadata is not None:
        sets.append("metadata = ?")
        params.append(_metadata(run_id, update.metadata))
    for name in ("result", "termination", "error", "model"):
        value = getattr(update, name)
        if value is not None:
            sets.append(f"{name} = ?")
            params.append(value)


def _metadata(run_id: str, metadata: Mapping[str, Any]) -> str:
    return wrap(metadata, f"the metadata of run {run_id}")


def _events_between(db: Db, run_id: str, first: int, last: int) -> list[RunEvent]:
    rows = db.query(
        "SELECT body FROM events WHERE run_id = ? AND seq BETWEEN ? AND ? ORDER BY seq",
        (run_id, first, last),
    )
    return [event_from_body(row[0]) for row in rows]


def with_state(step: StepWrite, state: RunState) -> StepWrite:
    """`step` with its update setting `state`."""
    return replace(step, update=replace(step.update or RunUpdate(), state=state))
