"""JSON codec for persisted and streamed data, with a schema version.

Every encoded object carries `"v": SCHEMA_VERSION`. Decoders accept every version listed
in `_READABLE`, so logs written by older releases keep replaying.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from operator import attrgetter
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
    # Each field by name, not by `getattr` in a loop: every message of every run passes here.
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    if message.reasoning is not None:
        out["reasoning"] = message.reasoning
    if message.tokens is not None:
        out["tokens"] = message.tokens
    if message.tokens_source is not None:
        out["tokens_source"] = message.tokens_source
    if message.provider_data is not None:
        out["provider_data"] = message.provider_data
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
    try:
        payload = _payload(kind, data.get("payload", {}))
    except _Mismatch as exc:
        where = f"event {kind!r} (run {data.get('run_id')}, seq {data.get('seq')})"
        raise CodecError(exc.message_at(where)) from None
    return RunEvent(
        run_id=str(data["run_id"]), seq=int(data["seq"]), ts=float(data["ts"]), payload=payload
    )


def payload_to_dict(payload: EventPayload) -> dict[str, Any]:
    """The JSON payload of an event: its fields in order, less those its class leaves out."""
    return _fields_to_dict(payload)


def payload_from_dict(kind: Any, data: Any, *, where: str | None = None) -> EventPayload:
    """Decode the payload of an event of type `kind`.

    A key the class may leave out decodes to its default when absent.

    Raises:
        CodecError: `kind` is not an event type, a required key is missing, or a value
            has the wrong type. Keys the class does not know (written by a later release)
            are skipped.
    """
    try:
        return _payload(kind, data)
    except _Mismatch as exc:
        raise CodecError(exc.message_at(where or f"event {kind!r}")) from None


class _Mismatch(Exception):
    """Data that does not fit a class: where in it (keys from the payload down), and how."""

    def __init__(self, path: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.path, self.message = path, message

    def message_at(self, where: str) -> str:
        keys = "".join(f": {key!r}" for key in self.path)
        return f"{where}{keys}: {self.message}"


def _payload(kind: Any, data: Any) -> EventPayload:
    cls = EVENT_CLASSES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        known = ", ".join(sorted(EVENT_CLASSES))
        raise CodecError(f"unknown event type {kind!r} (known: {known})")
    return _decode_fields(cls, data)


# Each class's fields are looked at once (`_encoding`, `_decoding`), not per event: events
# are encoded on every step of every run.

_PLAIN: Final = frozenset({str, int, float, bool, type(None)})
_Omit = Callable[[Any, Any], bool]
_Decoder = Callable[[Any], Any]
_Values = Callable[[Any], tuple[Any, ...]]


@cache
def _encoding(cls: type) -> tuple[tuple[tuple[str, _Omit | None], ...], _Values]:
    """The keys of `cls`'s JSON, in order, each with its leave-out rule.

    With them, a function that reads their values from an instance in one call.
    """
    keys = tuple(
        (f.name, f.metadata.get(OMIT_WHEN))
        for f in dataclasses.fields(cls)
        if PRESENCE_OF not in f.metadata
    )
    names = [name for name, _ in keys]
    if len(names) > 1:
        return keys, attrgetter(*names)
    return keys, lambda obj: tuple(getattr(obj, name) for name in names)


def _fields_to_dict(obj: object) -> dict[str, Any]:
    keys, values = _encoding(type(obj))
    out: dict[str, Any] = {}
    for (name, omit), value in zip(keys, values(obj), strict=True):
        if omit is None or not omit(obj, value):
            out[name] = value if type(value) in _PLAIN else _to_json(value)
    return out


def _to_json(value: Any) -> Any:
    if value.__class__ is tuple:  # the common cases by identity first, then the general ones
        return [item if type(item) in _PLAIN else _to_json(item) for item in value]
    if isinstance(value, Usage):
        return usage_to_dict(value)
    if isinstance(value, tuple):
        return [_to_json(item) for item in cast(tuple[Any, ...], value)]
    if hasattr(value.__class__, "__dataclass_fields__"):  # an instance of a dataclass, not a class
        return _fields_to_dict(value)
    if isinstance(value, Mapping):
        return dict(cast(Mapping[str, Any], value))
    return value


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    presence_of: str | None
    """Not a key: whether the data has this key."""
    decode: _Decoder
    required: bool


@cache
def _decoding(cls: type) -> tuple[_Field, ...]:
    """How to decode each field of `cls`."""
    hints = get_type_hints(cls)
    return tuple(
        _Field(
            name=f.name,
            presence_of=f.metadata.get(PRESENCE_OF),
            decode=_decoder(hints[f.name]),
            required=f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
        )
        for f in dataclasses.fields(cls)
    )


def _decode_fields(cls: type[_T], data: Any) -> _T:
    if not isinstance(data, dict):
        raise _Mismatch((), f"expected a JSON object, got {_kind(data)}")
    data = cast(dict[str, Any], data)
    plan = _decoding(cls)
    values: dict[str, Any] = {}
    for field in plan:
        if field.presence_of is not None:
            values[field.name] = field.presence_of in data
        elif field.name in data:
            try:
                values[field.name] = field.decode(data[field.name])
            except _Mismatch as exc:
                raise _Mismatch((field.name, *exc.path), exc.message) from None
        elif field.required:
            raise _Mismatch((), f"the required key {field.name!r} is missing")
    return cls(**values)  # keys of a later release (a newer process on the store) are skipped


@cache
def _decoder(hint: Any) -> _Decoder:
    """A function that checks and decodes a JSON value of type `hint`."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return _same
    if origin in (Union, types.UnionType):
        (inner,) = (a for a in args if a is not type(None))
        decode, optional = _decoder(inner), type(None) in args
        return lambda value: None if value is None and optional else decode(value)
    if hint is Usage:
        return lambda value: usage_from_dict(_expect(dict, value))
    if origin is tuple:
        item = _decoder(args[0])
        return lambda value: tuple(item(v) for v in _expect(list, value))
    if origin is Mapping:
        return lambda value: _expect(dict, value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        nested = cast(type[Any], hint)
        return lambda value: _decode_fields(nested, value)
    if hint is float:  # an int is kept as written, so that it encodes the same again
        return lambda value: value if type(value) in (float, int) else _expect(float, value)
    kind = cast(type, hint)
    return lambda value: value if type(value) is kind else _expect(kind, value)


def _same(value: Any) -> Any:
    return value


def _expect(kind: type, value: Any) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _Mismatch((), f"expected {kind.__name__}, got {_kind(value)}")
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
    get = data.get
    return Usage(
        input_tokens=int(get("input_tokens", 0)),
        output_tokens=int(get("output_tokens", 0)),
        cached_tokens=int(get("cached_tokens", 0)),
        reasoning_tokens=int(get("reasoning_tokens", 0)),
        requests=int(get("requests", 0)),
        tool_calls=int(get("tool_calls", 0)),
        cost_usd=float(get("cost_usd", 0.0)),
    )


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
    """Compact JSON, UTF-8 kept readable; keys that are not strings written as strings."""
    try:
        # Without the option first: it costs orjson a third more on every call, and text
        # with only string keys is the same with it or without it.
        return orjson.dumps(data).decode()
    except TypeError:
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
