"""DeepSeek V3 / V3.1 / R1: calls between full-width special tokens.

V3.1 writes `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>`; V3 and R1 write
`<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME` followed by the arguments in a ```json code
fence. Both are read by one parser; the format name chooses how calls are written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from harness.core.messages import ToolCall
from harness.gateway.textcalls._objects import named_call
from harness.gateway.textcalls._tokens import CallTokens, read_token_calls
from harness.gateway.textcalls._types import Body, Item, MalformedCall, ParseContext
from harness.gateway.textcalls.base import TextFormat, arguments_text

__all__ = ["DeepSeekFormat"]

TOKENS: Final = CallTokens(
    section_begin=("<｜tool▁calls▁begin｜>",),
    section_end="<｜tool▁calls▁end｜>",
    call_begin="<｜tool▁call▁begin｜>",
    call_end="<｜tool▁call▁end｜>",
)
SEP: Final = "<｜tool▁sep｜>"
_TYPED_NAME: Final = re.compile(r"\s*([^\s`{]+)[ \t]*(?:\n|(?=```)|(?=\{))")


def _read_call(inner: str, markup: str, ended: bool) -> Item:
    head, found, rest = inner.partition(SEP)
    if not found:
        problem = f"the call has no {SEP} between the tool name and the arguments"
        return MalformedCall(text=markup, problem=problem, truncated=not ended)
    if head.strip() == "function" and (typed := _TYPED_NAME.match(rest)) is not None:
        return named_call(typed.group(1), rest[typed.end() :], closed=ended)
    return named_call(head.strip(), rest, closed=ended)


class DeepSeekFormat(TextFormat):
    """DeepSeek's tool-call tokens, in the V3.1 form or the V3/R1 form with a code fence."""

    markers = (*TOKENS.section_begin, TOKENS.call_begin)

    def __init__(self, name: str, *, fenced: bool) -> None:
        self.name = name
        self._fenced = fenced
        shape = (
            f"function{SEP}NAME, a new line, and the arguments as a JSON object in a ```json "
            "code fence"
            if fenced
            else f"NAME{SEP} followed by the arguments as a JSON object"
        )
        self.rules = (
            f"Write the calls between {TOKENS.section_begin[0]} and {TOKENS.section_end}; "
            f"each call as {TOKENS.call_begin}{shape}, then {TOKENS.call_end}.",
        )

    def read_answer(self, text: str, context: ParseContext) -> Body:
        """Answer text and calls."""
        body = Body()
        read_token_calls(text, body, TOKENS, _read_call)
        return body

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        """The calls in one section."""
        if self._fenced:
            inner = "".join(
                f"{TOKENS.call_begin}function{SEP}{c.name}\n```json\n"
                f"{arguments_text(c.arguments)}\n```{TOKENS.call_end}"
                for c in calls
            )
        else:
            inner = "".join(
                f"{TOKENS.call_begin}{c.name}{SEP}{arguments_text(c.arguments)}{TOKENS.call_end}"
                for c in calls
            )
        return f"{TOKENS.section_begin[0]}{inner}{TOKENS.section_end}"
