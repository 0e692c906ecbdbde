"""Kimi K2: calls between section and call tokens.

Each call is `<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{json}
<|tool_call_end|>`, inside `<|tool_calls_section_begin|>` ... `<|tool_calls_section_end|>`.
The id is `functions.NAME:IDX`, and the name comes from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from harness.core.messages import ToolCall
from harness.gateway.textcalls._objects import named_call
from harness.gateway.textcalls._tokens import CallTokens, read_token_calls
from harness.gateway.textcalls._types import Body, Item, MalformedCall, ParseContext
from harness.gateway.textcalls.base import TextFormat, arguments_text

__all__ = ["KimiK2Format"]

TOKENS: Final = CallTokens(
    section_begin=("<|tool_calls_section_begin|>",),
    section_end="<|tool_calls_section_end|>",
    call_begin="<|tool_call_begin|>",
    call_end="<|tool_call_end|>",
)
ARGUMENTS: Final = "<|tool_call_argument_begin|>"


def _read_call(inner: str, markup: str, ended: bool) -> Item:
    head, found, arguments = inner.partition(ARGUMENTS)
    call_id = head.strip()
    name = call_id.removeprefix("functions.").rsplit(":", 1)[0].strip()
    if not found or not name:
        problem = f"the call {call_id!r} has no {ARGUMENTS} and arguments"
        return MalformedCall(text=markup, problem=problem, name=name or None, truncated=not ended)
    return named_call(name, arguments, call_id=call_id, closed=ended)


class KimiK2Format(TextFormat):
    """Moonshot Kimi K2."""

    name = "kimi_k2"
    markers = (*TOKENS.section_begin, TOKENS.call_begin)
    rules = (
        f"Write the calls between {TOKENS.section_begin[0]} and {TOKENS.section_end}; each "
        f"call as {TOKENS.call_begin}functions.NAME:INDEX{ARGUMENTS}, the arguments as a "
        f"JSON object, then {TOKENS.call_end}. INDEX counts the calls from 0.",
    )

    def read_answer(self, text: str, context: ParseContext) -> Body:
        """Answer text and calls."""
        body = Body()
        read_token_calls(text, body, TOKENS, _read_call)
        return body

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        """The calls in one section, numbered from 0."""
        inner = "".join(
            f"{TOKENS.call_begin}functions.{c.name}:{index}{ARGUMENTS}"
            f"{arguments_text(c.arguments)}{TOKENS.call_end}"
            for index, c in enumerate(calls)
        )
        return f"{TOKENS.section_begin[0]}{inner}{TOKENS.section_end}"
