"""Rows of the store to and from harness objects, through the versioned core codec."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from harness.core.codec import (
    SCHEMA_VERSION,
    dumps,
    event_from_dict,
    loads,
    message_from_dict,
    message_to_dict,
    payload_to_dict,
    usage_from_dict,
    usage_to_dict,
)
from harness.core.events import EVENT_TYPES, EventPayload, RunEvent
from harness.core.messages import Message
from harness.core.results import TerminationReason
from harness.core.states import RunState
from harness.core.usage import Usage
from harness.errors import ConfigError
from harness.store._sql import Row
from harness.store.protocol import Control, ControlKind, RunRecord

__all__ = [
    "CONTROL_COLUMNS",
    "RUN_COLUMNS",
    "control_from_row",
    "encode",
    "encode_message",
    "encode_payloads",
    "encode_usage",
    "event_from_body",
    "event_head",
    "event_tail",
    "message_from_body",
    "run_from_row",
    "unwrap",
    "wrap",
]

RUN_COLUMNS: Final = (
    "run_id, agent, state, task, resumed_from, model, priority, created_at, updated_at, "
    "started_at, finished_at, usage, result, termination, error, owner, lease_expires_at, "
    "metadata, last_seq, result_data, task_type, trace_parent, "
    "experiment, variant, parent_run_id, root_run_id, depth, children_usage, engine"
)
CONTROL_COLUMNS: Final = "id, run_id, kind, created_at, body"


def encode(data: dict[str, Any], what: str) -> str:
    """JSON text of `data`.

    Raises:
        ConfigError: `data` holds something JSON cannot represent; `what` names it.
    """
    try:
        return dumps(data)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{what} is not JSON-compatible: {exc}") from exc


def wrap(data: Mapping[str, Any] | str, what: str) -> str:
    """JSON text of free-form `data` (metadata, payloads, blobs) inside a versioned envelope.

    Raises:
        ConfigError: `data` holds something JSON cannot represent; `what` names it.
    """
    value = data if isinstance(data, str) else dict(data)
    return encode({"v": SCHEMA_VERSION, "data": value}, what)


def unwrap(body: str) -> Any:
    """The data inside an envelope written by `wrap`."""
    return loads(body)["data"]


def event_head(run_id: str) -> str:
    """An event's stored body up to its `seq`: the same text for every event of the run.

    `event_head(run_id) + str(seq) + event_tail(...)` is the codec's `event_to_dict` of the
    event, encoded, byte for byte.
    """
    return f'{dumps({"v": SCHEMA_VERSION, "run_id": run_id})[:-1]},"seq":'


def event_tail(run_id: str, ts: float, kind: str, payload: dict[str, Any]) -> str:
    """An event's stored body after its `seq` (`payload`: its `encode_payloads` entry).

    Raises:
        ConfigError: The payload is not JSON-compatible.
    """
    try:
        text = dumps({"ts": ts, "type": kind, "payload": payload})
    except (TypeError, ValueError) as exc:  # named only when it fails: this runs per event
        what = f"the payload of event {kind} of run {run_id}"
        raise ConfigError(f"{what} is not JSON-compatible: {exc}") from exc
    return f",{text[1:]}"


def encode_payloads(payloads: Sequence[EventPayload], run_id: str) -> tuple[dict[str, Any], ...]:
    """The JSON form of each payload, in one loop: a step's events pass here.

    Raises:
        ConfigError: Unknown event type.
    """
    for payload in payloads:
        if payload.type not in EVENT_TYPES:
            raise ConfigError(f"unknown event type {payload.type!r} (run {run_id})")
    return tuple([payload_to_dict(payload) for payload in payloads])


def event_from_body(body: str) -> RunEvent:
    """The event stored as `body`."""
    return event_from_dict(loads(body))


def encode_message(message: Message, run_id: str) -> str:
    """The stored body of a message.

    Raises:
        ConfigError: A field holds something JSON cannot represent.
    """
    try:
        return dumps(message_to_dict(message))
    except (TypeError, ValueError) as exc:  # named only when it fails: this runs per message
        what = f"a {message.role} message of run {run_id}"
        raise ConfigError(f"{what} is not JSON-compatible: {exc}") from exc


def message_from_body(body: str) -> Message:
    """The message stored as `body`."""
    return message_from_dict(loads(body))


def encode_usage(usage: Usage) -> str:
    """The stored form of usage counters."""
    return dumps({"v": SCHEMA_VERSION, **usage_to_dict(usage)})


def run_from_row(row: Row, previous_owner: str | None = None) -> RunRecord:
    """A `RunRecord` from a row selected with `RUN_COLUMNS` (`previous_owner`: `claim`'s)."""
    usage = _NO_USAGE if row[11] == _NO_USAGE_TEXT else usage_from_dict(loads(row[11]))
    return RunRecord(
        run_id=row[0],
        agent=row[1],
        state=_STATES.get(row[2]) or RunState(row[2]),
        task=row[3],
        resumed_from=row[4],
        model=row[5],
        priority=int(row[6]),
        created_at=float(row[7]),
        updated_at=float(row[8]),
        started_at=_float(row[9]),
        finished_at=_float(row[10]),
        usage=usage,
        result=row[12],
        termination=cast("TerminationReason | None", row[13]),  # a string: no Union per row
        error=row[14],
        owner=row[15],
        lease_expires_at=_float(row[16]),
        metadata=unwrap(row[17]),
        last_seq=int(row[18]),
        result_data=None if row[19] is None else unwrap(row[19]),
        task_type=row[20],
        previous_owner=previous_owner,
        trace_parent=row[21],
        experiment=row[22],
        variant=row[23],
        parent_run_id=row[24],
        root_run_id=row[25],
        depth=int(row[26]),
        children_usage=_NO_USAGE if row[27] is None else usage_from_dict(loads(row[27])),
        engine=row[28],
    )


_STATES: Final[Mapping[str, RunState]] = {str(state): state for state in RunState}
"""Each stored state's member, looked up rather than called (`RunState(text)` only names
an unknown one in its error)."""
_NO_USAGE: Final = Usage()
_NO_USAGE_TEXT: Final = encode_usage(_NO_USAGE)
"""The usage every run is created with (`_writes.create_run`), decoded once: one shared
frozen `Usage` for every run that used nothing yet."""


def control_from_row(row: Row) -> Control:
    """A `Control` from a row selected with `CONTROL_COLUMNS`."""
    return Control(
        id=int(row[0]),
        run_id=row[1],
        kind=cast(ControlKind, row[2]),
        created_at=float(row[3]),
        payload=unwrap(row[4]),
    )


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
