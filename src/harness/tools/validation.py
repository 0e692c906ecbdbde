"""Structural validation of tool arguments against their JSON Schema.

This is the only module that imports `jsonschema`. It imports it on first use, so that
importing harness stays fast.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final, cast

from harness.errors import ToolDefinitionError, ToolError

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError  # noqa: TID251
    from jsonschema.protocols import Validator  # noqa: TID251

__all__ = [
    "ArgumentsValidator",
    "InvalidArguments",
    "Violation",
    "check_schema",
    "json_path",
    "quick_check",
    "validator_for",
]

_MESSAGE_CHARS: Final = 240

_ANNOTATIONS: Final = frozenset({"title", "description", "default", "examples", "$comment"})
"""Keywords that never make an instance invalid."""
_OBJECT_KEYWORDS: Final = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties"}
_PROPERTY_KEYWORDS: Final = _ANNOTATIONS | {"type"}
_JSON_TYPES: Final[Mapping[str, tuple[type, ...]]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "array": (list,),
    "object": (dict,),
}
"""The Python types of decoded JSON that surely have each JSON Schema type (`True` is a
`bool`, never an `integer`; a float such as `2.0` is left to `jsonschema`)."""

QuickCheck = Callable[[Any], bool]
_Fields = dict[str, Any]


@dataclass(frozen=True, kw_only=True, slots=True)
class Violation:
    """One way in which arguments break a tool's schema."""

    path: str
    """Where, as a JSON path: `$` is the arguments object, `$.items[0]` a part of it."""
    message: str
    """What is wrong there."""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class InvalidArguments(ToolError):
    """The arguments of a call do not fit what the tool accepts.

    Raised while arguments are converted to Python values (or by a tool itself); the call
    then ends with status `invalid_arguments` and the violations are listed to the model.

    Args:
        violations: What is wrong, and where.
        hint: What the model should do instead.
    """

    def __init__(self, violations: Sequence[Violation], *, hint: str | None = None) -> None:
        super().__init__("; ".join(str(v) for v in violations), hint=hint)
        self.violations = tuple(violations)


def json_path(parts: Iterable[str | int]) -> str:
    """Write a location inside the arguments as a JSON path such as `$.items[2].name`.

    Args:
        parts: Object keys and array indices, outermost first.

    Returns:
        The path, `$` for the arguments object itself.
    """
    path = "$"
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part.isidentifier():
            path += f".{part}"
        else:
            path += f"[{_shorten(repr(part), 60)}]"
    return path


def check_schema(schema: Mapping[str, Any], *, tool_name: str) -> None:
    """Check that `schema` is a valid JSON Schema (draft 2020-12) for an arguments object.

    Args:
        schema: The tool's parameters schema.
        tool_name: The tool's name, for the error message.

    Raises:
        ToolDefinitionError: The schema is not valid draft 2020-12.
    """
    from jsonschema import Draft202012Validator  # noqa: TID251
    from jsonschema.exceptions import SchemaError  # noqa: TID251

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = json_path(exc.absolute_path)
        raise ToolDefinitionError(
            f"Tool {tool_name!r}: invalid JSON Schema at {where}: {exc.message}"
        ) from exc


class ArgumentsValidator:
    """Validates arguments objects against one tool's schema (compiled once).

    Most tool schemas are flat: named properties of one JSON type each, some required,
    perhaps no others allowed. For those, arguments that plainly fit are accepted by a
    check of a few dictionary look-ups (`quick_check`); anything else, and every failure,
    goes through `jsonschema`, whose messages the model reads.

    Args:
        schema: The JSON Schema (draft 2020-12) given to the model for this tool.
    """

    def __init__(self, schema: Mapping[str, Any]) -> None:
        from jsonschema import Draft202012Validator  # noqa: TID251

        self._validator: Validator = Draft202012Validator(schema)
        self._quick = quick_check(schema)

    def violations(self, arguments: Any) -> list[Violation]:
        """List every way in which `arguments` break the schema, outermost first.

        Args:
            arguments: The decoded arguments.

        Returns:
            The violations; empty when the arguments are valid.
        """
        if self._quick is not None and self._quick(arguments):
            return []
        errors = sorted(self._validator.iter_errors(arguments), key=_error_order)
        return [_violation(error) for error in errors]


def quick_check(schema: Mapping[str, Any]) -> QuickCheck | None:
    """A check that accepts only arguments `jsonschema` accepts, for a flat object schema.

    The schema may use `type: object`, `properties` whose subschemas give at most one
    `type` (a name, not a list), `required` and a boolean `additionalProperties`, besides
    annotations. The check says `True` when the decoded arguments surely fit, `False` when
    `jsonschema` must decide (and explain); it never accepts what `jsonschema` refuses.

    Returns:
        The check, or `None` when the schema uses anything else.
    """
    required: object = schema.get("required", [])
    extra: object = schema.get("additionalProperties", True)
    properties: object = schema.get("properties", {})
    if (
        not set(schema) <= _OBJECT_KEYWORDS
        or schema.get("type") != "object"
        or not isinstance(extra, bool)
        or not isinstance(required, list)
        or not isinstance(properties, dict)
    ):
        return None
    names = tuple(cast(list[object], required))
    types = _property_types(cast(dict[object, object], properties))
    if types is None or not all(isinstance(name, str) for name in names):
        return None
    return _flat_check(cast(tuple[str, ...], names), types, allow_others=extra)


_Allowed = tuple[tuple[type, ...], tuple[type, ...] | None]
"""The Python types a property may have (`(object,)`: any), and those of its array items."""


def _property_types(properties: dict[object, object]) -> dict[str, _Allowed] | None:
    """What each property allows, or `None` if one of them is not flat."""
    types: dict[str, _Allowed] = {}
    for name, subschema in properties.items():
        if not isinstance(name, str) or not isinstance(subschema, dict):
            return None
        keywords = cast(dict[str, object], subschema)
        allowed = _leaf_types(keywords, _PROPERTY_KEYWORDS)
        items = keywords.get("items")
        if keywords.get("type") == "array" and isinstance(items, dict):
            item_types = _leaf_types(cast(dict[str, object], items), _PROPERTY_KEYWORDS)
            if allowed is None or item_types is None:
                return None
            types[name] = (allowed, item_types)
        elif allowed is not None and "items" not in keywords:
            types[name] = (allowed, None)
        else:
            return None
    return types


def _leaf_types(keywords: dict[str, object], known: frozenset[str]) -> tuple[type, ...] | None:
    """The Python types a subschema of at most one `type` allows, or `None` if not that."""
    kind = keywords.get("type")
    if not set(keywords) - {"items"} <= known:
        return None
    if kind is None:
        return (object,)
    if isinstance(kind, str) and kind in _JSON_TYPES:
        return _JSON_TYPES[kind]
    return None


def _flat_check(
    required: tuple[str, ...], types: dict[str, _Allowed], *, allow_others: bool
) -> QuickCheck:
    def check(arguments: Any) -> bool:
        if type(arguments) is not dict:
            return False
        fields = cast(_Fields, arguments)
        for name in required:
            if name not in fields:
                return False
        for name, value in fields.items():
            allowed = types.get(name)
            if allowed is None:
                if not allow_others:
                    return False
                continue
            kinds, items = allowed
            if type(value) not in kinds and kinds[0] is not object:
                return False
            if items is not None and items[0] is not object:
                elements: list[Any] = value
                for item in elements:
                    if type(item) not in items:
                        return False
        return True

    return check


def validator_for(schema: Mapping[str, Any], *, tool_name: str) -> ArgumentsValidator:
    """Check `schema` and compile a validator for it, once per distinct schema.

    Toolsets are built for every run; checking a schema against the meta-schema costs far
    more than a whole agent step, so checked, compiled validators are shared.

    Raises:
        ToolDefinitionError: The schema is not valid draft 2020-12.
    """
    try:
        key = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(f"Tool {tool_name!r}: the schema is not JSON: {exc}") from exc
    return _compiled(key, tool_name)


@lru_cache(maxsize=1024)
def _compiled(key: str, tool_name: str) -> ArgumentsValidator:
    schema = json.loads(key)
    check_schema(schema, tool_name=tool_name)
    return ArgumentsValidator(schema)


def _error_order(error: ValidationError) -> tuple[int, str]:
    return len(error.absolute_path), json_path(_parts(error))


def _parts(error: ValidationError) -> list[str | int]:
    return list(error.absolute_path)


def _violation(error: ValidationError) -> Violation:
    return Violation(path=json_path(_parts(error)), message=_shorten(error.message, _MESSAGE_CHARS))


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
