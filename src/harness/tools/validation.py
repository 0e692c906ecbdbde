"""Structural validation of tool arguments against their JSON Schema.

This is the only module that imports `jsonschema`. It imports it on first use, so that
importing harness stays fast.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final

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
    "validator_for",
]

_MESSAGE_CHARS: Final = 240


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

    Args:
        schema: The JSON Schema (draft 2020-12) given to the model for this tool.
    """

    def __init__(self, schema: Mapping[str, Any]) -> None:
        from jsonschema import Draft202012Validator  # noqa: TID251

        self._validator: Validator = Draft202012Validator(schema)

    def violations(self, arguments: Any) -> list[Violation]:
        """List every way in which `arguments` break the schema, outermost first.

        Args:
            arguments: The decoded arguments.

        Returns:
            The violations; empty when the arguments are valid.
        """
        errors = sorted(self._validator.iter_errors(arguments), key=_error_order)
        return [_violation(error) for error in errors]


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
