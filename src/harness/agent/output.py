"""Structured output: an agent's final answer as a value of a declared type, repaired if need be.

An agent declares an output type, a pydantic model (or any type pydantic can validate) or
a JSON Schema. The model's final answer is read leniently (code fences, prose around the
JSON, trailing commas and comments are all fine), then validated. When it does not fit,
`repair_prompt` tells the model what is wrong and where, at most `MAX_REPAIRS` times;
after that the run ends with what was found and `output_valid=False`, never a crash.

    spec = OutputSpec.from_type(Report)
    found = spec.extract(answer)
    if found.ok:
        report = found.value                     # a Report
    else:
        messages.append(Message.user(spec.repair_prompt(found.errors)))
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

from harness.agent._lenient_json import find_json
from harness.core.bounds import json_bound_problem
from harness.errors import ConfigError, ToolDefinitionError
from harness.gateway.model import ResponseFormat
from harness.tools.validation import json_path, validator_for

if TYPE_CHECKING:
    from pydantic import TypeAdapter, ValidationError

__all__ = ["MAX_REPAIRS", "REPAIR_LEAD", "ExtractResult", "OutputSpec"]

MAX_REPAIRS: Final = 2
"""Times the model is asked to fix an answer that does not match the output type."""

REPAIR_LEAD: Final = "Your final answer is not a valid"
"""How every repair request (`OutputSpec.repair_prompt`) begins."""

_MAX_ERRORS: Final = 10
"""Errors shown to the model; more would bury the first ones."""
_NAME: Final = re.compile(r"[^A-Za-z0-9_-]+")

Check = Callable[[Any], tuple[Any, list[str]]]
"""Validates a JSON value: the typed value and no errors, or `None` and the errors."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ExtractResult:
    """What was found in an answer, and whether it matches the output type."""

    value: Any = None
    """The validated value (a model instance for a pydantic type); `None` when invalid."""
    errors: tuple[str, ...] = ()
    """What is wrong, as `$.path: what`; empty when `value` is valid."""
    raw_json: Any = None
    """The JSON found in the answer, valid or not: the partial content of a failed answer;
    `None` when no JSON was found."""

    @property
    def ok(self) -> bool:
        """True when the answer held a valid value."""
        return not self.errors


@dataclass(frozen=True, kw_only=True, eq=False)
class OutputSpec:
    """An agent's output type: its JSON Schema, and how to read and check an answer.

    Make one with `from_type`.
    """

    name: str
    """A short name for the type (letters, digits, `_` and `-`), e.g. the model's class name."""
    schema: Mapping[str, Any]
    """The JSON Schema an answer must match."""
    _check: Check = field(repr=False)
    _dump: Callable[[Any], Any] = field(repr=False)

    @classmethod
    def from_type(
        cls, output_type: type[Any] | Mapping[str, Any] | OutputSpec, *, name: str | None = None
    ) -> OutputSpec:
        """The spec of a pydantic model (or any type pydantic validates) or a JSON Schema.

        Args:
            output_type: A pydantic model class, a type such as `list[Item]` or a dataclass,
                or a JSON Schema (draft 2020-12) as a dict. A spec is returned as it is.
            name: The name of the type; by default the class name or the schema's `title`.

        Raises:
            ConfigError: The type cannot be described as JSON Schema, or the schema is not
                valid JSON Schema.
        """
        if isinstance(output_type, OutputSpec):
            return output_type
        if isinstance(output_type, Mapping):
            return _from_schema(output_type, name)
        return _from_python_type(output_type, name)

    def extract(self, text: str) -> ExtractResult:
        """Find the JSON value in an answer and validate it.

        Accepts the JSON alone, in a code fence, or with prose around it; trailing commas
        and `//` or `/* */` comments are ignored. When several JSON values are found, the
        last valid one wins; when none is valid, the errors are those of the last one.
        """
        problem = json_bound_problem(text, what="the answer")
        if problem:
            return ExtractResult(errors=(problem,))
        found = find_json(text)
        if not found.values:
            return ExtractResult(errors=(found.problem or _NO_JSON,))
        last_errors: list[str] | None = None
        for raw in reversed(found.values):
            value, errors = self._check(raw)
            if not errors:
                return ExtractResult(value=value, raw_json=raw)
            last_errors = last_errors or errors
        if found.problem and found.problem_size > found.longest:
            # The biggest bracketed part, most likely the value meant, is broken JSON.
            return ExtractResult(errors=(found.problem,))
        return ExtractResult(errors=tuple(last_errors or ()), raw_json=found.values[-1])

    def validate(self, value: Any) -> ExtractResult:
        """Validate a JSON value (already parsed) against the output type."""
        checked, errors = self._check(value)
        return ExtractResult(
            value=checked if not errors else None, errors=tuple(errors), raw_json=value
        )

    def dump(self, value: Any) -> Any:
        """The JSON form of a valid value (e.g. a model instance as a dict), for storage."""
        return self._dump(value)

    def instructions(self) -> str:
        """The lines to add to the system prompt: how the final answer must look."""
        return (
            f"When the task is done, give your final answer as one JSON value of type "
            f"{self.name!r} and nothing else: no tool call, no prose, no code fence. It "
            f"must match this JSON Schema:\n{_compact(self.schema)}"
        )

    def repair_prompt(self, errors: Sequence[str]) -> str:
        """The message that asks the model to fix an answer: what is wrong, where, and how.

        Args:
            errors: The `errors` of an `ExtractResult`.
        """
        listed = [f"- {error}" for error in errors[:_MAX_ERRORS]]
        if len(errors) > _MAX_ERRORS:
            listed.append(f"- ... and {len(errors) - _MAX_ERRORS} more")
        return (
            f"{REPAIR_LEAD} {self.name!r}. What is wrong ($ is the whole "
            "value, $.a.b[0] a part of it):\n"
            + "\n".join(listed)
            + "\nReply with only the corrected JSON value: no prose, no code fence, no "
            f"comments. It must match this JSON Schema:\n{_compact(self.schema)}"
        )

    def response_format(self) -> ResponseFormat:
        """The schema as a request setting, for providers with native structured output.

        `strict` is set only when the schema keeps OpenAI's strict rules (every object
        closed with `additionalProperties: false` and all its properties required), since
        a strict request with any other schema is rejected.
        """
        return ResponseFormat(name=self.name, schema=self.schema, strict=_strict_ok(self.schema))


_NO_JSON: Final = (
    "$: no JSON value was found in the answer; the answer must be the JSON value itself."
)


# --- types ----------------------------------------------------------------------------------


def _from_schema(schema: Mapping[str, Any], name: str | None) -> OutputSpec:
    title = schema.get("title")
    label = _safe_name(name or (title if isinstance(title, str) else "") or "output")
    try:
        validator = validator_for(schema, tool_name=label)
    except ToolDefinitionError as exc:
        raise ConfigError(
            f"The output schema {label!r} is not valid JSON Schema: {exc}. Fix the schema, "
            "or declare the output type as a pydantic model."
        ) from exc

    def check(value: Any) -> tuple[Any, list[str]]:
        errors = [str(v) for v in validator.violations(value)]
        return (None, errors) if errors else (value, [])

    return OutputSpec(name=label, schema=dict(schema), _check=check, _dump=lambda value: value)


def _from_python_type(output_type: type[Any], name: str | None) -> OutputSpec:
    from pydantic import TypeAdapter, ValidationError

    label = _safe_name(name or getattr(output_type, "__name__", "") or "output")
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        schema = adapter.json_schema()
    except Exception as exc:
        raise ConfigError(
            f"The output type {output_type!r} cannot be described as JSON Schema "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}). Use "
            "a pydantic model, a dataclass or a TypedDict of JSON-compatible fields."
        ) from exc

    def check(value: Any) -> tuple[Any, list[str]]:
        try:
            return adapter.validate_python(value), []
        except ValidationError as exc:
            return None, _pydantic_errors(exc)

    def dump(value: Any) -> Any:
        return adapter.dump_python(value, mode="json")

    return OutputSpec(name=label, schema=schema, _check=check, _dump=dump)


def _pydantic_errors(error: ValidationError) -> list[str]:
    return [f"{json_path(e['loc'])}: {e['msg']}" for e in error.errors(include_url=False)]


def _safe_name(name: str) -> str:
    return _NAME.sub("_", name).strip("_")[:64] or "output"


def _compact(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":"))


def _strict_ok(node: object) -> bool:
    """Whether every object schema in `node` is closed and requires all its properties."""
    if isinstance(node, list):
        return all(_strict_ok(item) for item in cast(list[object], node))
    if not isinstance(node, dict):
        return True
    schema = cast(dict[str, Any], node)
    properties = schema.get("properties")
    if schema.get("type") == "object" or isinstance(properties, dict):
        named = set(cast(dict[str, Any], properties or {}))
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required") or ()) != named:
            return False
    return all(_strict_ok(value) for value in schema.values())
