"""Answer text with call blocks between an opening and a closing marker."""

from __future__ import annotations

from collections.abc import Callable

from harness.gateway.textcalls._json import decode_at
from harness.gateway.textcalls._objects import calls_from_json, items_from_value
from harness.gateway.textcalls._types import Body, Item

__all__ = ["BlockReader", "read_blocks", "read_json_block"]

BlockReader = Callable[[str, str, bool], tuple[list[Item], int | None]]
"""Reads one block from (inner text, whole markup, closed?) into its items and, for an
unclosed block, how much of the inner text it used (`None`: all of it)."""


def read_blocks(
    text: str,
    body: Body,
    read_block: BlockReader,
    *,
    opening: str,
    closing: str,
    json_body: bool = False,
) -> None:
    """Split `text` into answer pieces and blocks, each read by `read_block`.

    A block ends at `closing`, at the next `opening`, or at the end of the text. With
    `json_body`, a JSON value at the start of a block is skipped before looking for them,
    so that markers inside its strings do not end the block.
    """
    position = 0
    while (start := text.find(opening, position)) >= 0:
        body.content.append(text[position:start])
        inner = start + len(opening)
        search = _json_end(text, inner) if json_body else inner
        close = text.find(closing, search)
        following = text.find(opening, search)
        closed = close >= 0 and not 0 <= following < close
        end = close if closed else (following if following >= 0 else len(text))
        markup_end = end + len(closing) if closed else end
        items, used = read_block(text[inner:end], text[start:markup_end], closed)
        body.items.extend(items)
        position = markup_end if used is None else inner + used
    body.content.append(text[position:])


def _json_end(text: str, start: int) -> int:
    """After the JSON value that starts the block at `start`, or `start` if none does."""
    lead = len(text) - len(text[start:].lstrip())
    try:
        return decode_at(text, lead)[1]
    except ValueError:
        return start


def read_json_block(inner: str, markup: str, closed: bool) -> tuple[list[Item], int | None]:
    """A block holding a JSON call object (or a list of them).

    An unclosed block (generation stopped at the end of the turn) counts when its JSON is
    whole; whatever follows the JSON is answer text.
    """
    if not closed:
        start = len(inner) - len(inner.lstrip())
        try:
            value, end = decode_at(inner, start)
        except ValueError:
            pass
        else:
            return items_from_value(value, markup), end
    return calls_from_json(inner, markup, closed=closed), None
