"""The `@tool` decorator: a typed, documented function becomes a `ToolSpec`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, overload

from harness.errors import ToolDefinitionError
from harness.tools._docstrings import parse_docstring
from harness.tools.schema import function_schema
from harness.tools.spec import Approval, SideEffects, ToolSpec

__all__ = ["tool"]


@overload
def tool(function: Callable[..., Any], /) -> ToolSpec: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    side_effects: SideEffects = "mutating",
    timeout: float | None = None,
    approval: Approval = "auto",
    max_result_chars: int | None = None,
    tags: tuple[str, ...] = (),
    max_concurrent: int | None = None,
) -> Callable[[Callable[..., Any]], ToolSpec]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    side_effects: SideEffects = "mutating",
    timeout: float | None = None,
    approval: Approval = "auto",
    max_result_chars: int | None = None,
    tags: tuple[str, ...] = (),
    max_concurrent: int | None = None,
) -> ToolSpec | Callable[[Callable[..., Any]], ToolSpec]:
    """Turn a typed function (sync or async) into a `ToolSpec`.

    Use it bare (`@tool`) or with options (`@tool(side_effects="none")`). The JSON Schema
    of the arguments comes from the type hints; the description from the docstring
    (summary and body; the `Args:` section describes the parameters). After validation
    the arguments are converted to the annotated types, so a pydantic model parameter
    receives a model instance.

    Args:
        function: The function, when used bare.
        name: The tool's name; defaults to the function's name.
        description: Replaces the docstring as the tool's description.
        side_effects: What running the tool can change.
        timeout: Seconds a call may run; `None` uses `Limits.tool_timeout`.
        approval: Whether calls need a human decision first.
        max_result_chars: Characters of the result the model sees.
        tags: Labels agents select the tool by (`"tag:NAME"` in an agent's `tools`).
        max_concurrent: Calls that may run at once in one `Harness`, across all its
            agents and runs; further calls wait for a slot (not counted in `timeout`).

    Returns:
        The spec, or a decorator that makes one.

    Raises:
        ToolDefinitionError: The function has no docstring (and no `description` was
            given), or a parameter has a missing or unsupported annotation.
    """

    def make(target: Callable[..., Any]) -> ToolSpec:
        doc = parse_docstring(inspect.getdoc(target) or "")
        text = description if description is not None else doc.description
        label = getattr(target, "__qualname__", repr(target))
        if not text.strip():
            raise ToolDefinitionError(
                f"Tool function {label!r} has no docstring. Write one that tells the model "
                "what the tool does and when to use it, or pass description=."
            )
        schema = function_schema(target, descriptions=doc.params)
        return ToolSpec(
            name=name or getattr(target, "__name__", ""),
            description=text,
            parameters=schema.parameters,
            function=target,
            side_effects=side_effects,
            timeout=timeout,
            approval=approval,
            max_result_chars=max_result_chars,
            tags=tuple(tags),
            max_concurrent=max_concurrent,
            coerce=schema.coerce,
            context_param=schema.context_param,
        )

    return make if function is None else make(function)
