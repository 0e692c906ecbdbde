"""JSON codec for persisted and streamed data, with a schema version.

Every encoded object carries `"v": SCHEMA_VERSION`. Decoders accept every version listed
in `_READABLE`, so logs written by older releases keep replaying.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final, cast

import orjson

from harness.core.events import EVENT_TYPES, EventType, RunEvent
from harness.core.messages import Message, Role, TokensSource, ToolCall
from harness.core.results import RunResult, TerminationReason
from harness.core.usage import Usage

__all__ = [
    "SCHEMA_VERSION",
    "dumps",
    "event_from_dict",
    "event_to_dict",
    "loads",
    "message_from_dict",
    "message_to_dict",
    "result_from_dict",
    "result_to_dict",
    "usage_from_dict",
    "usage_to_dict",
]

SCHEMA_VERSION: Final = 1
_READABLE: Final = frozenset({1})
_ROLES: Final = frozenset({"system", "user", "assistant", "tool"})


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
        "payload": dict(event.payload),
    }


def event_from_dict(data: dict[str, Any]) -> RunEvent:
    """Decode an event envelope written by `event_to_dict` (any readable version)."""
    _check_version(data)
    kind = data.get("type")
    if kind not in EVENT_TYPES:
        raise CodecError(f"unknown event type {kind!r}")
    return RunEvent(
        run_id=str(data["run_id"]),
        seq=int(data["seq"]),
        ts=float(data["ts"]),
        type=cast(EventType, kind),
        payload=dict(data.get("payload") or {}),
    )


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


def loads(text: str) -> dict[str, Any]:
    """Parse one JSON object."""
    value = orjson.loads(text)
    if not isinstance(value, dict):
        raise CodecError("expected a JSON object")
    return cast(dict[str, Any], value)
