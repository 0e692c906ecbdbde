"""Cohere Command R7B / Command A: JSON action blocks.

Calls are `<|START_ACTION|>[{"tool_call_id": ..., "tool_name": ..., "parameters": {...}}]
<|END_ACTION|>`; reasoning is in `<|START_THINKING|>`, the answer in `<|START_RESPONSE|>`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from harness.core.messages import ToolCall
from harness.gateway.textcalls._blocks import read_blocks
from harness.gateway.textcalls._json import decode_at, dumps
from harness.gateway.textcalls._objects import calls_from_json, items_from_value
from harness.gateway.textcalls._types import Body, Item, ParseContext
from harness.gateway.textcalls.base import TextFormat, arguments_text

__all__ = ["CommandRFormat"]

ACTION: Final = "<|START_ACTION|>"
ACTION_END: Final = "<|END_ACTION|>"
_KEYS: Final = {"name_keys": ("tool_name",), "argument_keys": ("parameters",)}


def _read_action(inner: str, markup: str, closed: bool) -> tuple[list[Item], int | None]:
    if not closed:
        start = len(inner) - len(inner.lstrip())
        try:
            value, end = decode_at(inner, start)
        except ValueError:
            pass
        else:
            return items_from_value(value, markup, **_KEYS, id_key="tool_call_id"), end
    return calls_from_json(inner, markup, **_KEYS, id_key="tool_call_id", closed=closed), None


class CommandRFormat(TextFormat):
    """Cohere's action blocks."""

    name = "command_r7b"
    markers = (ACTION,)
    hidden = ("<|START_RESPONSE|>", "<|END_RESPONSE|>")
    rules = (
        f"Write the calls as one JSON array between {ACTION} and {ACTION_END}; each call is "
        'an object with the keys "tool_call_id" (counting from "0"), "tool_name" and '
        '"parameters".',
    )

    def read_answer(self, text: str, context: ParseContext) -> Body:
        """Answer text and action blocks."""
        body = Body()
        read_blocks(text, body, _read_action, opening=ACTION, closing=ACTION_END, json_body=True)
        return body

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        """All calls in one action block."""
        entries = ", ".join(
            f'{{"tool_call_id": {dumps(str(index))}, "tool_name": {dumps(c.name)}, '
            f'"parameters": {arguments_text(c.arguments)}}}'
            for index, c in enumerate(calls)
        )
        return f"{ACTION}[{entries}]{ACTION_END}"
