"""OTLP trace requests written straight from span records: protobuf by hand, no SDK objects.

The export process (`harness.observability.export_process`) receives spans as the
builder's plain tuples. Turning each into the SDK's `ReadableSpan` and then into the
`opentelemetry-proto` messages its encoder builds costs about five times the run the spans
describe; the messages a trace needs are few and fixed (`ExportTraceServiceRequest` →
`ResourceSpans` → `ScopeSpans` → `Span`, its `Event`s, `KeyValue`s, `AnyValue`s and
`Status`), so `SpanEncoder` writes their wire format itself, field for field what the SDK's
encoder writes for the same `ReadableSpan` (`tests/observability/test_otlp_encoder.py`
compares the two).

An attribute is encoded once per distinct key and value (most repeat from run to run: the
operation, the model, the tool) and kept in a bounded cache; a run's own values (its id,
its token counts) are encoded as they come.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any, Final

from harness.observability.context import child_span_id

__all__ = ["SpanEncoder"]

_NS: Final = 1_000_000_000
_FIXED64: Final = struct.Struct("<Q")
_DOUBLE: Final = struct.Struct("<d")
_KINDS: Final = {"internal": b"\x30\x01", "client": b"\x30\x03"}
"""`Span.kind` (field 6): SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT."""
_STATUS_CODES: Final = {"unset": 0, "ok": 1, "error": 2}
_FLAGS_LOCAL: Final = b"\x85\x01" + struct.pack("<I", 0x100)
"""`Span.flags` (field 16, fixed32): the parent's remoteness is known, and local."""
_FLAGS_REMOTE: Final = b"\x85\x01" + struct.pack("<I", 0x300)
"""The same, the parent remote (a run span whose caller was in another process)."""
_EMPTY_STATUS: Final = b"\x7a\x00"
_CACHE: Final = 8192
"""Distinct encoded attributes kept; the cache starts over past it."""


def _varint(value: int) -> bytes:
    """`value` (≥ 0, or a negative int64 as its two's complement) as a protobuf varint."""
    if value < 0:
        value += 1 << 64
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: its tag, the payload's length, the payload."""
    return tag + _varint(len(payload)) + payload


def _any_value(value: Any) -> bytes:
    """An `AnyValue` message (the oneof is written even when its value is the default)."""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        return _field(b"\x0a", value.encode())
    if isinstance(value, int):
        return b"\x18" + _varint(value)
    if isinstance(value, float):
        return b"\x21" + _DOUBLE.pack(value)
    if isinstance(value, bytes):
        return _field(b"\x3a", value)
    if isinstance(value, Sequence):
        items: Sequence[Any] = value  # pyright: ignore[reportUnknownVariableType]
        array = b"".join(_field(b"\x0a", _any_value(item)) for item in items)
        return _field(b"\x2a", array)
    raise TypeError(f"an attribute value of type {type(value).__name__} cannot be exported")


def _key_value(key: str, value: Any) -> bytes:
    """A `KeyValue` message, with its length in front (the caller writes the tag)."""
    body = _field(b"\x0a", key.encode()) + _field(b"\x12", _any_value(value))
    return _varint(len(body)) + body


def _attributes(tag: bytes, attributes: Mapping[str, Any]) -> bytes:
    return b"".join(tag + _key_value(key, value) for key, value in attributes.items())


class SpanEncoder:
    """Writes a run's span records as OTLP `Span`s, and batches of them as a request.

    Args:
        resource: The resource's attributes (`service.name`, `telemetry.sdk.*` …).
        scope_name: The instrumentation scope's name.
        scope_version: Its version.
    """

    def __init__(self, resource: Mapping[str, Any], scope_name: str, scope_version: str) -> None:
        self._resource = _field(b"\x0a", _attributes(b"\x0a", resource))
        scope = _field(b"\x0a", scope_name.encode())
        if scope_version:
            scope += _field(b"\x12", scope_version.encode())
        self._scope = _field(b"\x0a", scope)
        self._cache: dict[tuple[str, Any, type[Any]], bytes] = {}
        self._names: dict[str, bytes] = {}

    def spans(
        self,
        trace_id: str,
        span_id: str,
        parent_span_id: str | None,
        run_id: str,
        records: Sequence[Sequence[Any]],
    ) -> bytes:
        """The records of run `run_id` (its run span `span_id`) as `ScopeSpans.spans` fields.

        Each record holds a `SpanRecord`'s fields in order; JSON may have made its tuples
        lists.
        """
        trace = b"\x0a\x10" + bytes.fromhex(trace_id)
        run_span = bytes.fromhex(span_id)
        caller = None if parent_span_id is None else bytes.fromhex(parent_span_id)
        ids: dict[str, bytes] = {}
        out: list[bytes] = []
        for record in records:
            own_id, parent_id, name, kind, start, end, attributes, events, status, message = record[
                :10
            ]
            if parent_id is None:
                own, parent, flags = run_span, caller, _FLAGS_REMOTE if caller else _FLAGS_LOCAL
            else:
                own, flags = self._span_id(ids, run_id, own_id), _FLAGS_LOCAL
                parent = run_span if parent_id == "run" else self._span_id(ids, run_id, parent_id)
            parts = [trace, b"\x12\x08", own]
            if parent is not None:
                parts += (b"\x22\x08", parent)
            parts += (
                self._name(name),
                _KINDS[kind],
                b"\x39",
                _FIXED64.pack(int(start * _NS)),
                b"\x41",
                _FIXED64.pack(int(end * _NS)),
            )
            self._span_attributes(parts, attributes)
            for event in events:
                parts.append(_field(b"\x5a", self._event(event)))
            parts += (self._status(status, message), flags)
            body = b"".join(parts)
            out += (b"\x12", _varint(len(body)), body)
        return b"".join(out)

    def request(self, spans: Sequence[bytes]) -> bytes:
        """An `ExportTraceServiceRequest` of `spans` (as `spans` wrote them): one scope."""
        scope_spans = _field(b"\x12", self._scope + b"".join(spans))
        return _field(b"\x0a", self._resource + scope_spans)

    def _span_id(self, ids: dict[str, bytes], run_id: str, span_id: str) -> bytes:
        found = ids.get(span_id)
        if found is None:
            found = ids[span_id] = bytes.fromhex(child_span_id(run_id, span_id))
        return found

    def _name(self, name: str) -> bytes:
        found = self._names.get(name)
        if found is None:
            found = _field(b"\x2a", name.encode())
            if len(self._names) < _CACHE:
                self._names[name] = found
        return found

    def _span_attributes(self, parts: list[bytes], attributes: Mapping[str, Any]) -> None:
        """Each attribute as a `Span.attributes` field (9), from the cache where it was met."""
        cache = self._cache
        for key, value in attributes.items():
            kind: type[Any] = value.__class__
            if kind is list or kind is tuple:
                parts += (b"\x4a", _key_value(key, value))
                continue
            entry = (key, value, kind)  # True == 1 == 1.0, but they encode apart
            found = cache.get(entry)
            if found is None:
                if len(cache) >= _CACHE:
                    cache.clear()
                found = cache[entry] = b"\x4a" + _key_value(key, value)
            parts.append(found)

    def _event(self, event: Sequence[Any]) -> bytes:
        name, ts, attributes = event
        return (
            b"\x09"
            + _FIXED64.pack(int(ts * _NS))
            + _field(b"\x12", name.encode())
            + _attributes(b"\x1a", attributes)
        )

    def _status(self, status: str, message: str | None) -> bytes:
        """A `Status`; its message only with an error (the SDK drops it otherwise)."""
        code = _STATUS_CODES[status]
        if not code:
            return _EMPTY_STATUS
        text = _field(b"\x12", message.encode()) if message and code == 2 else b""
        return _field(b"\x7a", text + b"\x18" + _varint(code))
