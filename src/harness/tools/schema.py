"""Type hints to JSON Schema: the parameters of a typed function as a tool schema.

Pydantic builds the schema and, after structural validation, converts the JSON arguments
into the annotated Python types. It is imported on first use, so that importing harness
stays fast.
"""

from __future__ import annotations

import inspect
import typing
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Final, cast

from harness.errors import ToolDefinitionError
from harness.tools._schema_clean import clean_schema
from harness.tools.context import ToolContext
from harness.tools.spec import Coercer
from harness.tools.validation import InvalidArguments, Violation, json_path

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic_core import ErrorDetails

__all__ = ["FunctionSchema", "function_schema"]

_SUPPORTED: Final = (
    "str, int, float, bool, None, list[T], dict[str, T], tuple, Literal, Enum, "
    "pydantic models and dataclasses"
)


@dataclass(frozen=True, kw_only=True, slots=True)
class FunctionSchema:
    """The arguments of a function as a tool sees them."""

    parameters: dict[str, Any]
    """JSON Schema (draft 2020-12) of the arguments object."""
    coerce: Coercer
    """Turns validated JSON arguments into the annotated Python values."""
    context_param: str | None = None
    """The parameter annotated `ToolContext`, left out of the schema and injected."""


def function_schema(
    function: Callable[..., Any], *, descriptions: Mapping[str, str] | None = None
) -> FunctionSchema:
    """Describe the parameters of a typed function as a JSON Schema.

    Each parameter becomes a property; parameters with defaults are optional.
    A parameter's description comes from `Annotated[T, "text"]`, from pydantic's
    `Field(description=...)`, or else from `descriptions`.

    Args:
        function: The function; every parameter needs a type annotation.
        descriptions: Parameter descriptions, e.g. from the docstring's `Args:` section.

    Returns:
        The schema and the converter from JSON arguments to Python values.

    Raises:
        ToolDefinitionError: A parameter is missing an annotation, has a type that cannot
            be expressed in JSON Schema, or cannot be passed by keyword.
    """
    label = getattr(function, "__qualname__", repr(function))
    parameters = _parameters(function, label)
    hints = _type_hints(function, label)
    fields: dict[str, Any] = {}
    names: dict[str, str] = {}
    context_param = next((p.name for p in parameters if hints.get(p.name) is ToolContext), None)
    for index, parameter in enumerate(parameters):
        if parameter.name == context_param:
            continue
        if parameter.name not in hints:
            raise ToolDefinitionError(
                f"Tool function {label!r}: parameter {parameter.name!r} has no type "
                f"annotation. Annotate it, e.g. `{parameter.name}: str`."
            )
        description = (descriptions or {}).get(parameter.name)
        fields[f"p{index}"] = _field(parameter, hints[parameter.name], description)
        names[f"p{index}"] = parameter.name
    model = _model(function, label, fields, hints)
    return FunctionSchema(
        parameters=clean_schema(_json_schema(model, label, hints)),
        coerce=_coercer(model, names),
        context_param=context_param,
    )


def _parameters(function: Callable[..., Any], label: str) -> list[inspect.Parameter]:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(f"Tool function {label!r} has no readable signature.") from exc
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"Tool function {label!r}: *args and **kwargs ({parameter.name!r}) cannot be "
                "described to a model; declare each parameter with its type."
            )
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise ToolDefinitionError(
                f"Tool function {label!r}: parameter {parameter.name!r} is positional-only; "
                "tools receive their arguments by keyword."
            )
    return list(signature.parameters.values())


def _type_hints(function: Callable[..., Any], label: str) -> dict[str, Any]:
    try:
        return typing.get_type_hints(function, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(
            f"Tool function {label!r}: its type annotations could not be resolved "
            f"({type(exc).__name__}: {exc}). Make every type importable from the "
            "function's module."
        ) from exc


def _field(parameter: inspect.Parameter, hint: Any, doc: str | None) -> tuple[Any, Any]:
    """A pydantic field definition: the JSON key is the parameter's own name."""
    from pydantic import Field

    description = (
        None if _has_field_description(hint, parameter.default) else (_annotated_text(hint) or doc)
    )
    info = (
        Field(alias=parameter.name, description=description)
        if description
        else Field(alias=parameter.name)
    )
    default = ... if parameter.default is inspect.Parameter.empty else parameter.default
    return cast(Any, Annotated)[hint, info], default


def _annotated_text(hint: Any) -> str | None:
    """The first plain string in `Annotated[T, ...]` metadata: the description."""
    if typing.get_origin(hint) is not Annotated:
        return None
    return next((item for item in hint.__metadata__ if isinstance(item, str)), None)


def _has_field_description(hint: Any, default: Any) -> bool:
    from pydantic.fields import FieldInfo

    metadata: tuple[Any, ...] = getattr(hint, "__metadata__", ())
    infos = [item for item in (*metadata, default) if isinstance(item, FieldInfo)]
    return any(info.description for info in infos)


def _model(
    function: Callable[..., Any], label: str, fields: dict[str, Any], hints: dict[str, Any]
) -> type[BaseModel]:
    from pydantic import ConfigDict, create_model

    config = ConfigDict(extra="forbid", protected_namespaces=())
    try:
        return create_model(getattr(function, "__name__", "arguments"), __config__=config, **fields)
    except Exception as exc:
        raise _type_error(label, hints, exc) from exc


def _json_schema(model: type[BaseModel], label: str, hints: dict[str, Any]) -> dict[str, Any]:
    from pydantic.json_schema import PydanticJsonSchemaWarning

    try:
        with warnings.catch_warnings():
            # A default that is not JSON is left out of the schema; the tool still gets it.
            warnings.simplefilter("ignore", PydanticJsonSchemaWarning)
            return model.model_json_schema(by_alias=True)
    except Exception as exc:
        raise _type_error(label, hints, exc) from exc


def _type_error(label: str, hints: dict[str, Any], exc: Exception) -> ToolDefinitionError:
    """Name the parameter whose type pydantic could not turn into a schema."""
    name, hint = next(
        (
            (name, hint)
            for name, hint in hints.items()
            if name != "return" and hint is not ToolContext and not _works(hint)
        ),
        ("?", None),
    )
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return ToolDefinitionError(
        f"Tool function {label!r}: parameter {name!r} has a type that cannot be described "
        f"as JSON Schema ({hint!r}: {reason}). Use {_SUPPORTED}."
    )


def _works(hint: Any) -> bool:
    from pydantic import TypeAdapter

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            TypeAdapter(hint).json_schema()
    except Exception:
        return False
    return True


def _coercer(model: type[BaseModel], names: dict[str, str]) -> Coercer:
    from pydantic import ValidationError

    def coerce(arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            validated = model.model_validate(arguments)
        except ValidationError as exc:
            violations = [_violation(error) for error in exc.errors(include_url=False)]
            raise InvalidArguments(violations) from exc
        return {parameter: getattr(validated, field) for field, parameter in names.items()}

    return coerce


def _violation(error: ErrorDetails) -> Violation:
    return Violation(path=json_path(error["loc"]), message=error["msg"])
