"""What a text-only model is told about its tools, and its history written back as text.

Both come from the same `ToolDefinition`s and the same format object that reads the
replies, so what the model is shown is exactly what the parser accepts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from harness.core.messages import Message, ToolCall, ToolDefinition
from harness.gateway.textcalls._json import dumps
from harness.gateway.textcalls.base import TextFormat
from harness.gateway.textcalls.malformed import MALFORMED_TOOL_CALL, example_call, malformed_text

__all__ = ["render_history", "render_instructions", "with_instructions"]


def render_instructions(
    tools: Sequence[ToolDefinition], format: TextFormat, *, parallel: bool = True
) -> str:
    """The system-prompt section that describes the tools and how to call them."""
    listed = "\n".join(
        dumps({"name": t.name, "description": t.description, "parameters": t.parameters})
        for t in tools
    )
    several = (
        "You may write several calls in one reply; they run in parallel."
        if parallel
        else "Call at most one tool per reply."
    )
    rules = "\n".join(f"- {rule}" for rule in format.rules)
    return (
        "# Tools\n\n"
        "You can call the tools below. Each line describes one tool as JSON: its name, "
        "what it does, and its parameters as JSON Schema.\n\n"
        f"<tools>\n{listed}\n</tools>\n\n"
        "# How to call a tool\n\n"
        f"{rules}\n"
        "- The arguments must match the tool's parameters.\n"
        f"- {several}\n"
        "- After your calls, end your reply. The results come back in the next message, "
        f"{format.results_intro()}.\n"
        "- Calls written inside your reasoning are not run.\n"
        "- When you need no tool, answer in plain text without any call.\n\n"
        f"For example:\n{example_call(format, tools)}"
    )


def with_instructions(messages: Sequence[Message], instructions: str) -> list[Message]:
    """`messages` with `instructions` added to the system prompt (or as one)."""
    out = list(messages)
    if out and out[0].role == "system":
        system = out[0]
        joined = f"{system.content}\n\n{instructions}" if system.content else instructions
        out[0] = dataclasses.replace(system, content=joined)
    else:
        out.insert(0, Message.system(instructions))
    return out


def render_history(messages: Sequence[Message], format: TextFormat) -> list[Message]:
    """The conversation with tool calls and results written as text.

    Assistant calls become call markup in the assistant's text (a malformed call, the text
    the model wrote); consecutive tool results become one user message.
    """
    out: list[Message] = []
    results: list[Message] = []
    for message in messages:
        if message.role == "tool":
            results.append(message)
            continue
        if results:
            out.append(Message.user(format.render_results(results)))
            results = []
        if message.role == "assistant" and message.tool_calls:
            text = _calls_text(message.tool_calls, format)
            content = f"{message.content}\n\n{text}" if message.content else text
            message = dataclasses.replace(message, content=content, tool_calls=())
        out.append(message)
    if results:
        out.append(Message.user(format.render_results(results)))
    return out


def _calls_text(calls: Sequence[ToolCall], format: TextFormat) -> str:
    """The calls as markup, in order; malformed ones as the model wrote them."""
    parts: list[str] = []
    group: list[ToolCall] = []
    for call in calls:
        if call.name != MALFORMED_TOOL_CALL:
            group.append(call)
            continue
        if group:
            parts.append(format.render_calls(group))
            group = []
        parts.append(malformed_text(call.arguments))
    if group:
        parts.append(format.render_calls(group))
    return "\n".join(part for part in parts if part)
