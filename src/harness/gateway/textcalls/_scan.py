"""Finding markers in text that may still be growing.

While a reply streams, the whole text is scanned again for every chunk, so these scans
are kept cheap: markers that share their first two characters are found with one regular
expression (a literal prefix the regex engine searches for quickly), the rest with
`str.find`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["find_first", "held_back", "settled_end"]


@lru_cache(maxsize=64)
def _searchers(markers: tuple[str, ...]) -> tuple[tuple[str | re.Pattern[str], ...], int, str]:
    """How to look for `markers`, the longest marker's length, and their first characters."""
    groups: dict[str, list[str]] = {}
    for marker in markers:
        groups.setdefault(marker[:2], []).append(marker)
    searchers: list[str | re.Pattern[str]] = []
    for group in groups.values():
        if len(group) == 1:
            searchers.append(group[0])
        else:
            ordered = sorted(group, key=len, reverse=True)  # the longest of two at one place
            searchers.append(re.compile("|".join(map(re.escape, ordered))))
    width = max((len(m) for m in markers), default=0)
    return tuple(searchers), width, "".join({m[0] for m in markers})


def find_first(text: str, markers: Sequence[str], start: int = 0) -> tuple[int, str] | None:
    """The earliest occurrence of any marker at or after `start`: (index, marker)."""
    best: tuple[int, str] | None = None
    for searcher in _searchers(tuple(markers))[0]:
        if isinstance(searcher, str):
            index = text.find(searcher, start)
            found = (index, searcher) if index >= 0 else None
        else:
            match = searcher.search(text, start)
            found = (match.start(), match.group()) if match else None
        if found is not None and (best is None or found[0] < best[0]):
            best = found
    return best


def held_back(text: str, markers: Sequence[str]) -> int:
    """How many characters at the end of `text` could be the start of a marker."""
    _, width, firsts = _searchers(tuple(markers))
    tail = text[max(0, len(text) - width + 1) :]
    for index, char in enumerate(tail):
        if char in firsts:
            rest = tail[index:]
            if any(len(m) > len(rest) and m.startswith(rest) for m in markers):
                return len(rest)
    return 0


def settled_end(text: str, markers: Sequence[str], start: int = 0) -> int:
    """Where the text that is certainly not markup ends.

    That is at the first marker, or else before a possible marker prefix at the end.
    """
    found = find_first(text, markers, start)
    if found is not None:
        return found[0]
    return max(start, len(text) - held_back(text, markers))
