"""JSON codec for persisted and streamed data, with a schema version.

Every encoded object carries `"v": SCHEMA_VERSION`. Decoders accept every version listed
in `_READABLE`, so logs written by older releases keep replaying.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from functools import cache
from typing import Any, Final, TypeVar, Union, cast, get_args, get_origin, get_type_hints

import orjson

from harness.core.events import EVENT_CLASSES, OMIT_WHEN, PRESENCE_OF, EventPayload, RunEvent
from harness.core.messages import Message, Role, TokensSource, ToolCall
from harness.core.results import RunResult, TerminationReason
from harness.core.usage import Usage

__all__ = [
    "SCHEMA_VERSION",
    "CodecError",
    "dumps",
    "event_from_dict",
    "event_to_dict",
    "loads",
    "message_from_dict",
    "message_to_dict",
    "pack",
    "payload_from_dict",
    "payload_to_dict",
    "result_from_dict",
    "result_to_dict",
    "unpack",
    "usage_from_dict",
    "usage_to_dict",
]

SCHEMA_VERSION: Final = 1
_READABLE: Final = frozenset({1})
_ROLES: Final = frozenset({"system", "user", "assistant", "tool"})
_T = TypeVar("_T")


class CodecError(ValueError):
    """Data that does not decode as the expected harness object."""


def _check_version(data: dict[str, Any]) -> None:
    version = data.get("v", SCHEMA_VERSION)
    if version not in _READABLE:
        raise CodecError(f"schema version {version!r} is not readable (known: {sorted(_READABLE)})")


def message_to_dict(message: Message) -> dict[str, Any]:
    """Encode a message; empty optional fields are left out."""
    out: dict[str, Any] = {"v": SCHEMA_VERSION, "role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    for key in ("tool_call_id", "name", "reasoning", "tokens", "tokens_source", "provider_data"):
        value = getattr(message, key)
        if value is not None:
            out[key] = value
    return out


def message_from_dict(data: dict[str, Any]) -> Message:
    """Decode a message written by `message_to_dict` (any readable version)."""
    _check_version(data)
    role = data.get("role")
    if role not in _ROLES:
        raise CodecError(f"unknown message role {role!r}")
    calls = tuple(
        ToolCall(id=str(c["id"]), name=str(c["name"]), arguments=str(c["arguments"]))
        for c in data.get("tool_calls") or ()
    )
    return Message(
        role=cast(Role, role),
        content=data.get("content"),
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
        reasoning=data.get("reasoning"),
        tokens=data.get("tokens"),
        tokens_source=_tokens_source(data.get("tokens_source")),
        provider_data=data.get("provider_data"),
    )


def _tokens_source(value: Any) -> TokensSource | None:
    if value is None or value in ("reported", "estimated"):
        return value
    raise CodecError(f"unknown tokens_source {value!r}")


def event_to_dict(event: RunEvent) -> dict[str, Any]:
    """Encode an event envelope."""
    return {
        "v": SCHEMA_VERSION,
        "run_id": event.run_id,
        "seq": event.seq,
        "ts": event.ts,
        "type": event.type,
        "payload": payload_to_dict(event.payload),
    }


def event_from_dict(data: dict[str, Any]) -> RunEvent:
    """Decode an event envelope written by `event_to_dict` (any readable version).

    Raises:
        CodecError: An unknown event type, or a payload that does not fit its class.
    """
    _check_version(data)
    kind = data.get("type")
    where = f"event {kind!r} (run {data.get('run_id')}, seq {data.get('seq')})"
    return RunEvent(
        run_id=str(data["run_id"]),
        seq=int(data["seq"]),
        ts=float(data["ts"]),
        payload=payload_from_dict(kind, data.get("payload", {}), where=where),
    )


def payload_to_dict(payload: EventPayload) -> dict[str, Any]:
    """The JSON payload of an event: its fields in order, less those its class leaves out."""
    return _fields_to_dict(payload)


def payload_from_dict(kind: Any, data: Any, *, where: str | None = None) -> EventPayload:
    """Decode the payload of an event of type `kind`.

    A key the class may leave out decodes to its default when absent.

    Raises:
        CodecError: `kind` is not an event type, a required key is missing, a key is
            unknown, or a value has the wrong type.
    """
    cls = EVENT_CLASSES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        known = ", ".join(sorted(EVENT_CLASSES))
        raise CodecError(f"unknown event type {kind!r} (known: {known})")
    return _decode_fields(cls, data, where or f"event {kind!r}")


def _fields_to_dict(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        if PRESENCE_OF in f.metadata:
            continue
        value = getattr(obj, f.name)
        omit = f.metadata.get(OMIT_WHEN)
        if omit is None or not omit(obj, value):
            out[f.name] = _to_json(value)
    return out


def _to_json(value: Any) -> Any:
    if isinstance(value, Usage):
        return usage_to_dict(value)
    if isinstance(value, tuple):
        return [_to_json(item) for item in cast(tuple[Any, ...], value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields_to_dict(value)
    if isinstance(value, Mapping):
        return dict(cast(Mapping[str, Any], value))
    return value


@cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _decode_fields(cls: type[_T], data: Any, where: str) -> _T:
    if not isinstance(data, dict):
        raise CodecError(f"{where}: expected a JSON object, got {_kind(data)}")
    data = cast(dict[str, Any], data)
    hints, names = _hints(cls), set[str]()
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cast(Any, cls)):
        names.add(f.name)
        if (key := f.metadata.get(PRESENCE_OF)) is not None:
            values[f.name] = key in data
        elif f.name in data:
            values[f.name] = _decode(hints[f.name], data[f.name], f"{where}: {f.name!r}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise CodecError(f"{where}: the required key {f.name!r} is missing")
    if unknown := sorted(set(data) - names):
        raise CodecError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}")
    return cls(**values)


def _decode(hint: Any, value: Any, where: str) -> Any:
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = (a for a in args if a is not type(None))
        return _decode(inner, value, where)
    if hint is Usage:
        return usage_from_dict(_expect(dict, value, where))
    if origin is tuple:
        return tuple(_decode(args[0], item, where) for item in _expect(list, value, where))
    if origin is Mapping:
        return _expect(dict, value, where)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _decode_fields(hint, value, where)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return value  # kept as written, so that it encodes the same again
    return _expect(cast(type, hint), value, where)


def _expect(kind: type, value: Any, where: str) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise CodecError(f"{where}: expected {kind.__name__}, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def usage_to_dict(usage: Usage) -> dict[str, Any]:
    """Encode usage counters."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_tokens": usage.cached_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "requests": usage.requests,
        "tool_calls": usage.tool_calls,
        "cost_usd": usage.cost_usd,
    }


def usage_from_dict(data: dict[str, Any]) -> Usage:
    """Decode usage counters; missing counters are zero."""
    fields = usage_to_dict(Usage())
    return Usage(**{key: type(default)(data.get(key, default)) for key, default in fields.items()})


def result_to_dict(result: RunResult) -> dict[str, Any]:
    """Encode a run's result; empty optional fields are left out.

    Structured output (`data`) is stored as JSON: a pydantic model or a dataclass becomes
    its fields, so that `result_from_dict` gives back plain JSON values, which the agent's
    output type can validate again.
    """
    out: dict[str, Any] = {
        "v": SCHEMA_VERSION,
        "run_id": result.run_id,
        "output": result.output,
        "termination": result.termination,
        "complete": result.complete,
        "usage": usage_to_dict(result.usage),
        "messages": [message_to_dict(m) for m in result.messages],
    }
    if result.error is not None:
        out["error"] = result.error
    if result.detail is not None:
        out["detail"] = result.detail
    if result.data is not None:
        out["data"] = _plain(result.data)
    if result.output_valid is not None:
        out["output_valid"] = result.output_valid
    if result.output_errors:
        out["output_errors"] = list(result.output_errors)
    return out


def result_from_dict(data: dict[str, Any]) -> RunResult:
    """Decode a result written by `result_to_dict` (any readable version)."""
    _check_version(data)
    valid = data.get("output_valid")
    return RunResult(
        run_id=str(data["run_id"]),
        output=data.get("output"),
        termination=cast(TerminationReason, data.get("termination") or "error"),
        complete=bool(data.get("complete", False)),
        usage=usage_from_dict(data.get("usage") or {}),
        messages=tuple(message_from_dict(m) for m in data.get("messages") or ()),
        error=data.get("error"),
        detail=data.get("detail"),
        data=data.get("data"),
        output_valid=None if valid is None else bool(valid),
        output_errors=tuple(str(e) for e in data.get("output_errors") or ()),
    )


def _plain(value: Any) -> Any:
    """The JSON values of a pydantic model or a dataclass; anything else as it is.

    Pydantic is duck-typed here: core does not import it.
    """
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def dumps(data: dict[str, Any]) -> str:
    """Compact JSON, UTF-8 kept readable."""
    return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS).decode()


def pack(value: Any) -> bytes:
    """Compact JSON bytes of plain data (tuples become arrays)."""
    return orjson.dumps(value)


def unpack(data: bytes) -> Any:
    """Parse JSON bytes made by `pack`.

    Raises:
        CodecError: They are not JSON.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CodecError(f"not JSON: {exc}") from exc


def loads(text: str) -> dict[str, Any]:
    """Parse one JSON object."""
    value = orjson.loads(text)
    if not isinstance(value, dict):
        raise CodecError("expected a JSON object")
    return cast(dict[str, Any], value)
