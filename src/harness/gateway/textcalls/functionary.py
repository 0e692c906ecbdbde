"""Functionary v3.1 and Llama 3.1's custom tool format: `<function=NAME>{json}</function>`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from harness.core.messages import ToolCall
from harness.gateway.textcalls._json import decode_at
from harness.gateway.textcalls._objects import named_call
from harness.gateway.textcalls._types import Body, Item, MalformedCall, ParseContext
from harness.gateway.textcalls.base import TextFormat, arguments_text

__all__ = ["FunctionaryFormat"]

OPEN: Final = "<function="
CLOSE: Final = "</function>"
_HEAD: Final = re.compile(r"<function=([^>\s]+)>")


class FunctionaryFormat(TextFormat):
    """`<function=NAME>` followed by a JSON object."""

    name = "functionary_v3.1"
    markers = (OPEN,)
    rules = (f"Write each call as {OPEN}NAME>, the arguments as a JSON object, then {CLOSE}.",)

    def read_answer(self, text: str, context: ParseContext) -> Body:
        """Answer text and calls."""
        body = Body()
        position = 0
        while (start := text.find(OPEN, position)) >= 0:
            body.content.append(text[position:start])
            item, position = _read_call(text, start)
            body.items.append(item)
        body.content.append(text[position:])
        return body

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        """One tag per call."""
        return "".join(f"{OPEN}{c.name}>{arguments_text(c.arguments)}{CLOSE}" for c in calls)


def _read_call(text: str, start: int) -> tuple[Item, int]:
    """The call at `start` and where the text after it begins."""
    head = _HEAD.match(text, start)
    if head is None:
        close = text.find(CLOSE, start)
        end = len(text) if close < 0 else close + len(CLOSE)
        problem = f"the call has no tool name in {OPEN}NAME>"
        return MalformedCall(text=text[start:end], problem=problem, truncated=close < 0), end
    name, body_start = head.group(1), head.end()
    close = text.find(CLOSE, body_start)
    lead = len(text) - len(text[body_start:].lstrip())
    try:
        _, end = decode_at(text, lead)
    except ValueError:
        end = len(text) if close < 0 else close
        item = named_call(name, text[body_start:end], closed=close >= 0)
        return item, end + len(CLOSE) if close >= 0 else end
    after = text[end:]
    skip = len(after) - len(after.lstrip()) + len(CLOSE) if after.lstrip().startswith(CLOSE) else 0
    return named_call(name, text[lead:end]), end + skip
