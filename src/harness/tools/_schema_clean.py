"""Tidying generated JSON Schemas into what a model reads best.

Pydantic's schemas carry `title`s that only repeat names, and `$ref`s into `$defs` that
some models and servers follow poorly. Both go; nested objects reject unknown keys.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, cast

__all__ = ["clean_schema"]

_SUBSCHEMA: Final = (
    "items", "additionalProperties", "not", "if", "then", "else", "contains",
    "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema",
)  # fmt: skip
_SUBSCHEMA_LISTS: Final = ("anyOf", "allOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAPS: Final = ("properties", "patternProperties", "$defs", "dependentSchemas")
_DEFS_PREFIX: Final = "#/$defs/"

Schema = dict[str, Any]


class _CannotInline(Exception):
    """A `$ref` that refers to itself (directly or not), or to nothing."""


def clean_schema(schema: Schema) -> Schema:
    """Return a tidied copy of a generated JSON Schema.

    Local `$ref`s are replaced by their definitions unless a definition refers to itself;
    `title` keywords are removed; object schemas with `properties` get
    `"additionalProperties": false` unless they say otherwise.

    Args:
        schema: A JSON Schema as pydantic generates it.

    Returns:
        The tidied schema; the input is not changed.
    """
    return _tidy(_inline_definitions(schema))


def _map_subschemas(node: Schema, change: Callable[[Schema], Schema]) -> Schema:
    """Copy of `node` with `change` applied to each of its direct subschemas."""
    result = dict(node)
    for key in _SUBSCHEMA:
        if key in node:
            result[key] = _apply(change, node[key])
    for key in _SUBSCHEMA_LISTS:
        if isinstance(items := node.get(key), list):
            result[key] = [_apply(change, item) for item in cast(list[Any], items)]
    for key in _SUBSCHEMA_MAPS:
        if isinstance(mapping := node.get(key), dict):
            named = cast(dict[str, Any], mapping)
            result[key] = {name: _apply(change, item) for name, item in named.items()}
    return result


def _apply(change: Callable[[Schema], Schema], value: object) -> object:
    return change(cast(Schema, value)) if isinstance(value, dict) else value


def _tidy(node: Schema) -> Schema:
    node = _map_subschemas(node, _tidy)
    node.pop("title", None)
    if "properties" in node and node.get("type") == "object":
        node.setdefault("additionalProperties", False)
    return node


def _inline_definitions(schema: Schema) -> Schema:
    definitions: object = schema.get("$defs")
    if not isinstance(definitions, dict) or not definitions:
        return schema
    body = {key: value for key, value in schema.items() if key != "$defs"}
    try:
        return _inline(body, cast(dict[str, Any], definitions), frozenset())
    except _CannotInline:
        return schema


def _inline(node: Schema, definitions: dict[str, Any], seen: frozenset[str]) -> Schema:
    node = _map_subschemas(node, lambda sub: _inline(sub, definitions, seen))
    ref = node.get("$ref")
    if not isinstance(ref, str) or not ref.startswith(_DEFS_PREFIX):
        return node
    name = ref.removeprefix(_DEFS_PREFIX)
    target: object = definitions.get(name)
    if name in seen or not isinstance(target, dict):
        raise _CannotInline(name)
    inlined = _inline(cast(Schema, target), definitions, seen | {name})
    siblings = {key: value for key, value in node.items() if key != "$ref"}
    return {**inlined, **siblings}
