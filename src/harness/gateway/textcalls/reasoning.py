"""Reasoning before the answer: `<think>...</think>` and the like.

Reasoning starts at an opening tag at the very start of the reply, or at the start itself
when the prompt already opened it (`thinking_forced_open`). It ends at the closing tag. When
the closing tag never comes, the first call marker ends it: models such as Kimi K2 and
Qwen 3.5 call tools straight out of unclosed reasoning. Calls written before a closing tag
are part of the reasoning and never run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Final, Literal

from harness.gateway.textcalls._scan import find_first, settled_end, watch
from harness.gateway.textcalls._types import Quiet

__all__ = [
    "THINK",
    "THINK_TAGS",
    "TagPair",
    "opening",
    "settle_reasoning",
    "split_reasoning",
]

TagPair = tuple[str, str]
"""An opening and a closing tag."""

_LEAD: Final = re.compile(r"\s*")

THINK: Final[TagPair] = ("<think>", "</think>")
THINK_TAGS: Final[tuple[TagPair, ...]] = (
    THINK,
    ("[THINK]", "[/THINK]"),  # Magistral
    ("<|START_THINKING|>", "<|END_THINKING|>"),  # Command R7B
)
"""Reasoning tags of every family; all formats accept all of them, so that `auto` and the
format it picks always agree on where reasoning ends."""


def opening(
    text: str, tags: Sequence[TagPair], forced_open: bool
) -> tuple[int, tuple[str, ...]] | Literal["undecided"] | None:
    """Where reasoning starts, and the closing tags that may end it.

    `None` when the reply has no reasoning; `"undecided"` while it is too short to tell.
    Reasoning opened by the prompt ends at whichever closing tag comes first.
    """
    if not tags:
        return None
    spaces = _LEAD.match(text)
    lead = spaces.end() if spaces else 0
    width, beginnings, closers = _shape(tuple(tags))
    head = text[lead : lead + width + 1]
    for start_tag, end_tag in tags:
        if head.startswith(start_tag):
            return lead + len(start_tag), (end_tag,)
    if head in beginnings:
        return "undecided"
    return (0, closers) if forced_open else None


@lru_cache(maxsize=16)
def _shape(tags: tuple[TagPair, ...]) -> tuple[int, frozenset[str], tuple[str, ...]]:
    """The longest opening tag's length, every beginning of one, and the closing tags."""
    beginnings = frozenset(start[:size] for start, _ in tags for size in range(len(start) + 1))
    return max(len(start) for start, _ in tags), beginnings, tuple(end for _, end in tags)


def split_reasoning(
    text: str, tags: Sequence[TagPair], *, forced_open: bool, markers: Sequence[str]
) -> tuple[str, str]:
    """The reasoning text (raw) and the rest of a whole reply."""
    opened = opening(text, tags, forced_open)
    if opened == "undecided":  # the whole reply is a fragment of an opening tag, or empty
        opened = (0, tuple(end_tag for _, end_tag in tags)) if forced_open else None
    if opened is None:
        return "", text
    start, closers = opened
    closed = find_first(text, closers, start)
    if closed is not None:
        return text[start : closed[0]], text[closed[0] + len(closed[1]) :]
    found = find_first(text, markers, start)
    if found is not None:
        return text[start : found[0]], text[found[0] :]
    return text[start:], ""


def settle_reasoning(
    text: str, tags: Sequence[TagPair], *, forced_open: bool, markers: Sequence[str]
) -> tuple[str, int | None, Quiet | None]:
    """For a reply still arriving: the reasoning that will not change, and what follows.

    Also where the rest starts (`None` while the reasoning may still go on), and how it
    goes on (see `Quiet`).
    """
    opened = opening(text, tags, forced_open)
    if opened == "undecided":
        return "", None, None
    if opened is None:
        return "", 0, None
    start, closers = opened
    closed = find_first(text, closers, start)
    if closed is not None:
        return text[start : closed[0]], closed[0] + len(closed[1]), None
    found = find_first(text, markers, start)
    if found is not None:  # ends here, unless a closing tag follows after the call
        return text[start : found[0]], None, Quiet(None, len(text), (watch(text, closers, start),))
    watched = (*closers, *markers)
    end = settled_end(text, watched, start)
    return text[start:end], None, Quiet("reasoning", end, ((watched, end),))
