"""Telling the model about a call it wrote that could not be read.

A malformed call travels through the loop as a `ToolCall` with the reserved name
`malformed_tool_call`; the toolset answers it with the explanation stored in its
arguments, so the model gets a `tool` message like for any failed call, and nothing runs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final, cast

from harness.core.ids import new_id
from harness.core.messages import MALFORMED_TOOL_CALL, ToolCall, ToolDefinition
from harness.gateway.textcalls._json import dumps
from harness.gateway.textcalls._types import MalformedCall
from harness.gateway.textcalls.base import TextFormat

__all__ = [
    "MALFORMED_TOOL_CALL",
    "example_call",
    "explain_malformed",
    "malformed_call_feedback",
    "malformed_text",
    "malformed_tool_call",
]

_EXCERPT: Final = 300
_PLACEHOLDERS: Final[dict[str, Any]] = {
    "string": "...",
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "array": [],
    "object": {},
    "null": None,
}


def example_call(
    format: TextFormat, tools: Sequence[ToolDefinition], name: str | None = None
) -> str:
    """A call to `name` (or the first tool) written in `format`, with placeholder values."""
    tool = next((t for t in tools if t.name == name), tools[0] if tools else None)
    arguments: dict[str, Any] = {"argument": "value"}
    if tool is not None:
        properties = cast(dict[str, Any], tool.parameters.get("properties") or {})
        required = cast(list[str], tool.parameters.get("required") or list(properties)[:2])
        arguments = {key: _placeholder(properties.get(key)) for key in required}
    name = tool.name if tool else "tool_name"
    call = ToolCall(id="a1b2c3d4e", name=name, arguments=dumps(arguments))
    return format.render_calls([call])


def _placeholder(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return "..."
    node = cast(dict[str, Any], schema)
    if node.get("enum"):
        return cast(list[Any], node["enum"])[0]
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in cast(list[Any], kind) if k != "null"), "string")
    return _PLACEHOLDERS.get(kind if isinstance(kind, str) else "string", "...")


def explain_malformed(
    call: MalformedCall, format: TextFormat, tools: Sequence[ToolDefinition]
) -> str:
    """What the model is told about a call it wrote that could not be read."""
    excerpt = call.text if len(call.text) <= _EXCERPT else call.text[:_EXCERPT] + "..."
    reason = "it was cut off" if call.truncated else "it is malformed"
    return (
        f"Your tool call could not be read ({reason}), so nothing was run: {call.problem}.\n"
        f"You wrote: {excerpt}\n"
        "Write the call again in exactly this form, with your own values:\n"
        f"{example_call(format, tools, call.name)}"
    )


def malformed_tool_call(
    call: MalformedCall, format: TextFormat, tools: Sequence[ToolDefinition]
) -> ToolCall:
    """The reserved `ToolCall` that carries a malformed call through the loop."""
    payload = {"problem": explain_malformed(call, format, tools), "text": call.text}
    return ToolCall(id=new_id("call"), name=MALFORMED_TOOL_CALL, arguments=dumps(payload))


def _payload(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def malformed_call_feedback(arguments: str) -> str:
    """The `tool` message text for a `malformed_tool_call` call."""
    problem = _payload(arguments).get("problem")
    if isinstance(problem, str) and problem:
        return problem
    return (
        "Your tool call could not be read, so nothing was run. Write it again in the form "
        "the instructions show."
    )


def malformed_text(arguments: str) -> str:
    """The markup the model wrote, kept in a `malformed_tool_call` call."""
    text = _payload(arguments).get("text")
    return text if isinstance(text, str) else ""
