"""The format with no calls: reasoning is split off, everything else is the answer."""

from __future__ import annotations

from collections.abc import Sequence

from harness.core.messages import ToolCall
from harness.gateway.textcalls._types import Body, ParseContext
from harness.gateway.textcalls.base import TextFormat

__all__ = ["PlainFormat"]


class PlainFormat(TextFormat):
    """Text without tool calls (a turn without tools, or no format recognised)."""

    name = "plain"

    def read_answer(self, text: str, context: ParseContext) -> Body:
        """All of it is the answer."""
        return Body(content=[text])

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        """Calls as `name(arguments)` lines: a plain reply has no call syntax of its own."""
        return "\n".join(f"{c.name}({c.arguments})" for c in calls)
