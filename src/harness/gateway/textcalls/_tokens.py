"""Calls between special tokens: a section opens, each call has a begin and an end token.

Kimi K2 and DeepSeek write calls this way. A call ends at its end token, at the next call,
at the end of the section, or at the end of the text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.gateway.textcalls._scan import find_first
from harness.gateway.textcalls._types import Body, Item

__all__ = ["CallTokens", "read_token_calls"]

CallReader = Callable[[str, str, bool], Item]
"""Reads one call from (its text between the tokens, its whole markup, ended by its end
token or another call?)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class CallTokens:
    """The special tokens of one format."""

    section_begin: Sequence[str]
    section_end: str
    call_begin: str
    call_end: str


def read_token_calls(text: str, body: Body, tokens: CallTokens, read_call: CallReader) -> None:
    """Split `text` into answer pieces and calls."""
    openers = (*tokens.section_begin, tokens.call_begin, tokens.section_end)
    stops = (tokens.call_end, tokens.call_begin, tokens.section_end)
    position = 0
    while (found := find_first(text, openers, position)) is not None:
        index, token = found
        body.content.append(text[position:index])
        position = index + len(token)
        if token != tokens.call_begin:
            continue
        stop = find_first(text, stops, position)
        end = len(text) if stop is None else stop[0]
        after = end + len(tokens.call_end) if stop and stop[1] == tokens.call_end else end
        body.items.append(read_call(text[position:end], text[index:after], stop is not None))
        position = after
    body.content.append(text[position:])
