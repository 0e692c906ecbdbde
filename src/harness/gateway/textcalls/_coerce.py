"""Typing the text values of XML-style calls from the tool's JSON Schema.

The text `5123123` in `<parameter=ref>` is the string "5123123" when the schema says
string, and the number 5123123 when it says integer. Text that fits none of the allowed
types is kept as written, so the schema validation can tell the model what is wrong.
"""

from __future__ import annotations

import re
from typing import Any, Final, cast

from harness.gateway.textcalls._json import loads, loads_repaired

__all__ = ["coerce"]

_INTEGER: Final = re.compile(r"[-+]?\d+")
_ORDER: Final = ("null", "integer", "number", "boolean", "object", "array")


def _types(schema: Any) -> set[str]:
    """The JSON types a schema allows (empty: any type)."""
    if not isinstance(schema, dict):
        return set()
    node = cast(dict[str, Any], schema)
    found: set[str] = set()
    declared = node.get("type")
    if isinstance(declared, str):
        found.add(declared)
    elif isinstance(declared, list):
        found.update(t for t in cast(list[Any], declared) if isinstance(t, str))
    for key in ("anyOf", "oneOf"):
        for option in cast(list[Any], node.get(key) or []):
            option_types = _types(option)
            if not option_types:
                return set()
            found |= option_types
    for value in cast(list[Any], node.get("enum") or []) + (
        [node["const"]] if "const" in node else []
    ):
        found.add(_type_of(value))
    return found


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _as(kind: str, text: str) -> tuple[bool, Any]:
    """(True, value) when `text` reads as a value of JSON type `kind`."""
    stripped = text.strip()
    if kind == "null":
        return stripped == "null", None
    if kind == "integer":
        return (True, int(stripped)) if _INTEGER.fullmatch(stripped) else (False, None)
    if kind == "boolean":
        lowered = stripped.lower()
        return lowered in ("true", "false"), lowered == "true"
    try:
        value = loads(stripped) if kind == "number" else loads_repaired(stripped)[0]
    except ValueError:
        return False, None
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool), value
    return _type_of(value) == kind, value


def coerce(text: str, schema: Any) -> Any:
    """The JSON value of a parameter written as text, typed by its schema."""
    allowed = _types(schema)
    if allowed == {"string"}:
        return text
    for kind in _ORDER:
        if kind in allowed or not allowed:
            ok, value = _as(kind, text)
            if ok:
                return value
    return text
