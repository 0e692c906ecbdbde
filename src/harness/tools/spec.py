"""`ToolSpec`: everything harness knows about one tool."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from harness.core.messages import MALFORMED_TOOL_CALL, ToolDefinition
from harness.errors import ToolDefinitionError

__all__ = ["Approval", "Coercer", "SideEffects", "ToolSpec"]

SideEffects = Literal["none", "idempotent", "mutating", "destructive"]
"""What running a tool can change: nothing, the same thing each time, state, or a lot."""

Approval = Literal["auto", "ask", "deny"]
"""Whether a call runs on its own, waits for a human decision, or never runs."""

Coercer = Callable[[dict[str, Any]], dict[str, Any]]
"""Turns validated JSON arguments into the keyword arguments a tool function receives."""

_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""The tool names every major provider accepts."""
_TAG: Final = _NAME
"""Tags take the same characters as names."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolSpec:
    """One tool: what the model is told, how its arguments are checked, how it runs.

    The same `parameters` schema is shown to the model and validates its arguments.
    Build specs with the `tool` decorator from a typed function, or with
    `ToolSpec.from_schema` from a hand-written JSON Schema.
    """

    name: str
    """Unique name the model calls the tool by: 1 to 64 of `A-Z a-z 0-9 _ -`."""
    description: str
    """What the tool does and when to use it, written for the model."""
    parameters: dict[str, Any]
    """JSON Schema (draft 2020-12) of the arguments object."""
    function: Callable[..., Any]
    """Sync or async callable; receives the validated arguments as keyword arguments."""
    side_effects: SideEffects = "mutating"
    """What running the tool can change; drives approval policies and retries."""
    timeout: float | None = None
    """Seconds a call may run before it is stopped; `Limits.tool_timeout` may cut it shorter.

    `None` uses `Limits.tool_timeout`, or 30 s when that is not set either.
    """
    grace_s: float = 0.0
    """Seconds past the deadline before the call is cancelled, for a tool that stops its own
    work at `ToolContext.timeout_s` and reports it (as `bash` kills its command)."""
    approval: Approval = "auto"
    """Whether calls need a human decision first."""
    max_result_chars: int | None = None
    """Characters of the result the model sees; `None` uses `Limits.max_result_chars`."""
    tags: tuple[str, ...] = ()
    """Labels that agents select tools by (`"tag:db"` in an agent's `tools`)."""
    max_concurrent: int | None = None
    """Calls of this tool that may run at once in one `Harness`, whoever calls (all agents
    and runs of the process); further calls wait for a slot, before their timeout starts.
    `None` sets no limit."""
    context_param: str | None = field(default=None, repr=False, compare=False)
    """Name of the parameter that receives the `ToolContext`, if the function takes one."""
    coerce: Coercer | None = field(default=None, repr=False, compare=False)
    """Converts validated arguments to Python values (e.g. dicts to pydantic models).

    It raises `InvalidArguments` to reject them. `None` passes the decoded JSON as is.
    """

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ToolDefinitionError(
                f"Tool name {self.name!r} is invalid: use 1 to 64 letters, digits, '_' or '-'."
            )
        if self.name == MALFORMED_TOOL_CALL:
            raise ToolDefinitionError(
                f"Tool name {self.name!r} is reserved: harness answers calls it could not read "
                "from a model's text under that name. Choose another name."
            )
        if not self.description.strip():
            raise ToolDefinitionError(f"Tool {self.name!r} needs a description for the model.")
        if self.parameters.get("type") != "object":
            raise ToolDefinitionError(
                f'Tool {self.name!r}: parameters must be a JSON Schema with "type": "object".'
            )
        if self.timeout is not None and not self.timeout > 0:
            raise ToolDefinitionError(f"Tool {self.name!r}: timeout must be > 0 seconds.")
        if self.max_result_chars is not None and self.max_result_chars <= 0:
            raise ToolDefinitionError(f"Tool {self.name!r}: max_result_chars must be > 0.")
        if self.max_concurrent is not None and self.max_concurrent < 1:
            raise ToolDefinitionError(f"Tool {self.name!r}: max_concurrent must be >= 1.")
        for tag in self.tags:
            if not _TAG.fullmatch(tag):
                raise ToolDefinitionError(
                    f"Tool {self.name!r}: tag {tag!r} is invalid: use 1 to 64 letters, "
                    "digits, '_' or '-'."
                )

    @classmethod
    def from_schema(
        cls,
        *,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        function: Callable[..., Any],
        side_effects: SideEffects = "mutating",
        timeout: float | None = None,
        approval: Approval = "auto",
        max_result_chars: int | None = None,
        tags: tuple[str, ...] = (),
        max_concurrent: int | None = None,
    ) -> ToolSpec:
        """Declare a tool from a hand-written JSON Schema.

        The function receives the decoded arguments, as valid under `parameters`, as
        keyword arguments, without further conversion.

        Args:
            name: The name the model calls the tool by.
            description: What the tool does, written for the model.
            parameters: JSON Schema (draft 2020-12) of the arguments object; it is copied.
            function: Sync or async callable that does the work.
            side_effects: What running the tool can change.
            timeout: Seconds a call may run; `None` uses `Limits.tool_timeout`.
            approval: Whether calls need a human decision first.
            max_result_chars: Characters of the result the model sees.
            tags: Labels agents select the tool by.
            max_concurrent: Calls that may run at once in one `Harness`.

        Returns:
            The spec.

        Raises:
            ToolDefinitionError: The name, description, schema or limits are invalid.
        """
        return cls(
            name=name,
            description=description,
            parameters=copy.deepcopy(dict(parameters)),
            function=function,
            side_effects=side_effects,
            timeout=timeout,
            approval=approval,
            max_result_chars=max_result_chars,
            tags=tuple(tags),
            max_concurrent=max_concurrent,
        )

    def definition(self) -> ToolDefinition:
        """What the model is told about this tool (with its own copy of the schema)."""
        return ToolDefinition(
            name=self.name,
            description=self.description,
            parameters=copy.deepcopy(self.parameters),
        )

    @property
    def required(self) -> tuple[str, ...]:
        """Names of the parameters the model must always send."""
        required: object = self.parameters.get("required", ())
        if not isinstance(required, list | tuple):
            return ()
        return tuple(str(item) for item in cast(list[object], required))
