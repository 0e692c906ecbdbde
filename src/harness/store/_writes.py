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
from harness.core.states import RunState
from harness.core.usage import Usage
from harness.errors import ConfigError
from harness.store._inbox import mark_delivered
from harness.store._notices import notify
from harness.store._rows import (
    encode_message,
    encode_payloads,
    encode_usage,
    event_from_body,
    event_head,
    event_tail,
    wrap,
)
from harness.store._sql import Db, Dialect, insert_rows, marks
from harness.store.errors import StoreConflict
from harness.store.protocol import (
    RUN_STATES,
    TERMINAL_STATES,
    NewEvent,
    NewRun,
    RunUpdate,
    StepWrite,
)

__all__ = [
    "Encoded",
    "append",
    "check_state",
    "create_run",
    "encode_step",
    "record_audit",
    "snapshot",
    "transition",
    "with_state",
]


_NO_USAGE = encode_usage(Usage())
_RUN_FIELDS = (
    "run_id, agent, state, task, resumed_from, model, priority, task_type, created_at, "
    "updated_at, started_at, usage, metadata, owner, lease_expires_at, last_seq, "
    "last_message, trace_parent, experiment, variant, parent_run_id, root_run_id, depth, "
    "engine"
)
_CREATE_RUN = (
    f"INSERT INTO runs ({_RUN_FIELDS}) VALUES ({marks(_RUN_FIELDS.count(',') + 1)}) "
    "ON CONFLICT (run_id) DO NOTHING RETURNING 1"
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Encoded:
    """A step's events and messages as stored, encoded before its transaction.

    The transaction then only puts the `seq` it gives each event into its body, so that
    less of its time holds the event loop.
    """

    events: tuple[tuple[float, str, str, str], ...]
    """Each event's `ts`, type, and stored body before and after its `seq`, in order."""
    messages: tuple[str, ...]
    """The stored body of each message, in order."""


def encode_step(
    run_id: str, events: Sequence[NewEvent], messages: Sequence[Message], now: float
) -> Encoded:
    """Encode what a step writes, outside its transaction.

    `now` is the `ts` of events that have none.

    Raises:
        ConfigError: An unknown event type, or an event or message that is not
            JSON-compatible.
    """
    encoded: tuple[tuple[float, str, str, str], ...] = ()
    if events:
        payloads = encode_payloads([new.payload for new in events], run_id)
        head = event_head(run_id)  # the text before each `seq`: the run's, made once
        encoded = tuple(
            [
                (ts, kind, head, event_tail(run_id, ts, kind, payload))
                for new, payload in zip(events, payloads, strict=True)
                for ts, kind in ((now if new.ts is None else new.ts, new.payload.type),)
            ]
        )
    bodies = tuple([encode_message(m, run_id) for m in messages]) if messages else ()
    return Encoded(events=encoded, messages=bodies)


@dataclass(frozen=True, slots=True)
class _Counters:
    """A run's last event `seq` and last message number."""

    last_seq: int
    last_message: int


def create_run(
    db: Db,
    d: Dialect,
    run: NewRun,
    events: Sequence[NewEvent],
    messages: Sequence[Message],
    now: float,
    encoded: Encoded | None = None,
) -> list[RunEvent]:
    """Insert a run with its first events and messages (`encoded` before, when given)."""
    if run.owner is not None and run.lease_s is None:
        raise ConfigError(f"run {run.run_id} is created with an owner but no lease_s")
    state = check_state(run.run_id, run.state)
    lease = now + run.lease_s if run.owner is not None and run.lease_s is not None else None
    started = now if state == RunState.RUNNING else None
    metadata = _metadata(run.run_id, run.metadata)
    row = (  # in the order of `_RUN_FIELDS`
        run.run_id,
        run.agent,
        state,
        run.task,
        run.resumed_from,
        run.model,
        run.priority,
        run.task_type,
        now,
        now,
        started,
        _NO_USAGE,
        metadata,
        run.owner,
        lease,
        len(events),
        len(messages),
        run.trace_parent,
        run.experiment,
        run.variant,
        run.parent_run_id,
        run.root_run_id,
        run.depth,
        run.engine,
    )
    # The key refuses a second run of the same id: no row back, and nothing written.
    if not db.query(_CREATE_RUN, row):
        raise StoreConflict(f"run {run.run_id} already exists")
    step = StepWrite(run_id=run.run_id, events=events, messages=messages)
    return _insert(db, d, step, _Counters(last_seq=0, last_message=0), now, encoded)


def append(
    db: Db, d: Dialect, step: StepWrite, now: float, encoded: Encoded | None = None
) -> list[RunEvent]:
    """Write one step, or return what it wrote before when its key was seen already."""
    if step.key is not None:
        _lock(db, d, step.run_id)  # writers of this run wait here, then see each other's keys
        done = db.query(
            "SELECT first_seq, last_seq FROM step_keys WHERE run_id = ? AND key = ?",
            (step.run_id, step.key),
        )
        if done:
            return _events_between(db, step.run_id, int(done[0][0]), int(done[0][1]))
    before = _advance(db, step, now)
    if before is None:
        raise _conflict(db, step)
    events = _insert(db, d, step, before, now, encoded)
    if step.key is not None:
        db.execute(
            "INSERT INTO step_keys (run_id, key, first_seq, last_seq) VALUES (?, ?, ?, ?)",
            (step.run_id, step.key, before.last_seq + 1, before.last_seq + len(events)),
        )
    return events


def transition(
    db: Db,
    d: Dialect,
    run_id: str,
    from_states: Collection[str],
    step: StepWrite,
    now: float,
    encoded: Encoded | None = None,
) -> list[RunEvent] | None:
    """Write `step` only if the run is in one of `from_states`; `None` when it is not."""
    guarded = replace(step, expect_states=from_states, owner=None, key=None)
    before = _advance(db, guarded, now)
    if before is None:
        if not db.query("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)):
            raise StoreConflict(f"there is no run {run_id}")
        return None
    return _insert(db, d, guarded, before, now, encoded)


def record_audit(db: Db, run_id: str, record: Mapping[str, Any], now: float) -> None:
    """Insert one audit record."""
    body = wrap(record, f"an audit record of run {run_id}")
    insert_rows(db, "INSERT INTO audit (run_id, ts, body)", [(run_id, now, body)])


def _lock(db: Db, d: Dialect, run_id: str) -> None:
    if not db.query("SELECT 1 FROM runs WHERE run_id = ?" + d.for_update, (run_id,)):
        raise StoreConflict(f"there is no run {run_id}")


def _advance(db: Db, step: StepWrite, now: float) -> _Counters | None:
    """Apply the step to the run's row if its conditions hold; the counters before it.

    The UPDATE takes the row's lock, so the run's writers queue here and each numbers its
    events after the last one committed.
    """
    sets = ["updated_at = ?", "last_seq = last_seq + ?", "last_message = last_message + ?"]
    params: list[object] = [now, len(step.events), len(step.messages)]
    if step.update is not None:
        _update_fields(step.run_id, step.update, now, sets, params)
    where, keys = "run_id = ?", [step.run_id]
    if step.expect_states is not None:
        states = [str(state) for state in step.expect_states]
        where += f" AND state IN ({marks(len(states))})" if states else " AND 1 = 0"
        keys.extend(states)
    if step.owner is not None:
        where += " AND owner = ?"
        keys.append(step.owner)
    rows = db.query(
        f"UPDATE runs SET {', '.join(sets)} WHERE {where} RETURNING last_seq, last_message",
        (*params, *keys),
    )
    if not rows:
        return None
    last_seq, last_message = rows[0]
    return _Counters(
        last_seq=int(last_seq) - len(step.events),
        last_message=int(last_message) - len(step.messages),
    )


def _conflict(db: Db, step: StepWrite) -> StoreConflict:
    """Why `step`'s conditions did not hold."""
    rows = db.query("SELECT state, owner FROM runs WHERE run_id = ?", (step.run_id,))
    if not rows:
        return StoreConflict(f"there is no run {step.run_id}")
    state, owner = rows[0]
    if step.expect_states is not None and state not in step.expect_states:
        expected = " or ".join(sorted(str(s) for s in step.expect_states)) or "no state"
        return StoreConflict(f"run {step.run_id} is {state}, not {expected}")
    return StoreConflict(f"run {step.run_id} is leased to {owner or 'nobody'}, not to {step.owner}")


def _insert(
    db: Db, d: Dialect, step: StepWrite, before: _Counters, now: float, encoded: Encoded | None
) -> list[RunEvent]:
    """Insert the step's events, messages and blobs after the run's counters `before`."""
    run_id = step.run_id
    if encoded is None:
        encoded = encode_step(run_id, step.events, step.messages, now)
    first = before.last_seq + 1
    events: list[RunEvent] = []
    if step.events:
        rows = [
            (run_id, seq, ts, kind, f"{head}{seq}{tail}")
            for seq, (ts, kind, head, tail) in enumerate(encoded.events, start=first)
        ]
        events = [
            RunEvent(run_id=run_id, seq=row[1], ts=row[2], payload=new.payload, stored=row[4])
            for row, new in zip(rows, step.events, strict=True)
        ]
        insert_rows(db, "INSERT INTO events (run_id, seq, ts, type, body)", rows)
        notify(db, d, "events", run_id)
    if step.messages:
        _insert_messages(db, run_id, before.last_message, step.messages, encoded.messages, now)
    if step.blobs:
        _put_blobs(db, run_id, step.blobs, now)
    for record in step.audit:
        record_audit(db, run_id, record, now)
    if step.delivered:
        mark_delivered(db, run_id, step.delivered, now)
    return events


def _insert_messages(
    db: Db, run_id: str, last: int, messages: Sequence[Message], bodies: Sequence[str], now: float
) -> None:
    insert_rows(
        db,
        "INSERT INTO messages "
        "(run_id, seq, role, tool_call_id, tokens, tokens_source, created_at, body)",
        [
            (
                run_id,
                last + i,
                m.role,
                m.tool_call_id,
                m.tokens,
                m.tokens_source,
                now,
                body,
            )
            for i, (m, body) in enumerate(zip(messages, bodies, strict=True), start=1)
        ],
    )


def _put_blobs(db: Db, run_id: str, blobs: Mapping[str, str], now: float) -> None:
    insert_rows(
        db,
        "INSERT INTO blobs (run_id, key, created_at, body)",
        [
            (run_id, key, now, wrap(text, f"blob {key} of run {run_id}"))
            for key, text in blobs.items()
        ],
        " ON CONFLICT (run_id, key) DO UPDATE SET body = excluded.body, "
        "created_at = excluded.created_at",
    )


def _update_fields(
    run_id: str, update: RunUpdate, now: float, sets: list[str], params: list[object]
) -> None:
    if update.state is not None:
        state = check_state(run_id, update.state)
        sets.append("state = ?")
        params.append(state)
        if state == RunState.RUNNING:
            sets.append("started_at = COALESCE(started_at, ?)")
            params.append(now)
        if state in TERMINAL_STATES:
            sets.append("finished_at = ?")
            params.append(now)
    if update.usage is not None:
        sets.append("usage = ?")
        params.append(encode_usage(update.usage))
    if update.children_usage is not None:
        sets.append("children_usage = ?")
        params.append(encode_usage(update.children_usage))
    if update.metadata is not None:
        sets.append("metadata = ?")
        params.append(_metadata(run_id, update.metadata))
    if update.result_data is not None:
        sets.append("result_data = ?")
        params.append(wrap(update.result_data, f"the result of run {run_id}"))
    for column in _PLAIN_COLUMNS:
        value = getattr(update, column)
        if value is not None:
            sets.append(f"{column} = ?")
            params.append(value)


_PLAIN_COLUMNS = ("result", "termination", "error", "model", "agent")
"""Fields of `RunUpdate` stored as they are, in columns of the same name."""


def check_state(run_id: str, state: str) -> str:
    """`state` as a plain string.

    Raises:
        ConfigError: `state` is not one of `RUN_STATES`.
    """
    if state not in RUN_STATES:
        raise ConfigError(f"unknown run state {state!r} for run {run_id}")
    return str(state)


def _metadata(run_id: str, metadata: Mapping[str, Any]) -> str:
    return wrap(metadata, f"the metadata of run {run_id}")


def _events_between(db: Db, run_id: str, first: int, last: int) -> list[RunEvent]:
    rows = db.query(
        "SELECT body FROM events WHERE run_id = ? AND seq BETWEEN ? AND ? ORDER BY seq",
        (run_id, first, last),
    )
    return [event_from_body(row[0]) for row in rows]


def with_state(step: StepWrite, state: str) -> StepWrite:
    """`step` with its update setting `state`."""
    return replace(step, update=replace(step.update or RunUpdate(), state=state))


def snapshot(step: StepWrite) -> StepWrite:
    """`step` with its own copies of the caller's lists, so that later changes miss it."""
    return StepWrite(  # every field by name, not `replace`: this runs for every step
        run_id=step.run_id,
        events=tuple(step.events),
        messages=tuple(step.messages),
        blobs=dict(step.blobs),
        audit=tuple(step.audit),
        update=step.update,
        expect_states=None if step.expect_states is None else frozenset(step.expect_states),
        owner=step.owner,
        key=step.key,
        delivered=tuple(step.delivered),
    )
