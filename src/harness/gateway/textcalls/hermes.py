"""Hermes 2 Pro / Qwen 2.5 / Granite: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from harness.core.messages import Message, ToolCall
from harness.gateway.textcalls._blocks import read_blocks, read_json_block
from harness.gateway.textcalls._json import dumps
from harness.gateway.textcalls._types import Body, ParseContext
from harness.gateway.textcalls.base import TextFormat, arguments_text

__all__ = ["HermesFormat", "tool_responses"]

OPEN: Final = "<tool_call>"
CLOSE: Final = "</tool_call>"


class HermesFormat(TextFormat):
    """`<tool_call>` blocks holding one JSON object each (Hermes, Qwen 2.5/3, Granite)."""

    name = "hermes"
    markers = (OPEN,)
    rules = (
        'Write each call as one JSON object with the keys "name" and "arguments", '
        "inside its own <tool_call></tool_call> block.",
    )

    def read_answer(self, text: str, context: ParseContext) -> Body:
        """Read answer text and `<tool_call>` blocks."""
        body = Body()
        read_blocks(text, body, read_json_block, opening=OPEN, closing=CLOSE, json_body=True)
        return body

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        """One `<tool_call>` block per call."""
        return "\n".join(
            f"{OPEN}\n"
            f'{{"name": {dumps(c.name)}, "arguments": {arguments_text(c.arguments)}}}\n'
            f"{CLOSE}"
            for c in calls
        )

    def render_results(self, results: Sequence[Message]) -> str:
        """Each result in a `<tool_response>` block."""
        return tool_responses(results)

    def results_intro(self) -> str:
        """Results come back in `<tool_response>` blocks."""
        return "inside <tool_response> tags"


def tool_responses(results: Sequence[Message]) -> str:
    """Results as Qwen's chat templates write them: one `<tool_response>` block each."""
    return "\n".join(f"<tool_response>\n{m.content or ''}\n</tool_response>" for m in results)
