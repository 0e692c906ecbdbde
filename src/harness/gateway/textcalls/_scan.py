"""Finding markers in text that may still be growing.

Markers that share their first two characters are found with one regular expression (a
literal prefix the regex engine searches for quickly), the rest with `str.find`.

While a reply streams, a format says how the text it settled goes on (a `Quiet`), and
`go_on` follows a chunk by looking only at the new text and the possible marker prefix
before it. When a watched marker appears, the format reads the whole text again: inside
`with memo:` (a `ScanMemo`, which `TextCallStream` enters then), `find_first` goes on from
where the same search over a shorter version of the same text stopped, so that the
searching a reply costs grows with its length, not with its square. A remembered search
is reused only for a text that starts with the text it was made on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from contextvars import ContextVar, Token
from functools import lru_cache
from typing import Final, NamedTuple

from harness.gateway.textcalls._types import Quiet, Watch

__all__ = [
    "ScanMemo",
    "find_first",
    "go_on",
    "held_back",
    "resume",
    "save",
    "settled_end",
    "settled_span",
    "watch",
]

Found = tuple[int, str] | None
"""Where a marker was found, and which: `(index, marker)`, or `None`."""

_HEAD: Final = 32
_LIMIT: Final = 256
_SHORT: Final = 256


class _Search(NamedTuple):
    """How to look for a set of markers."""

    searchers: tuple[str | re.Pattern[str], ...]
    width: int
    """The longest marker's length."""
    arriving: re.Pattern[str]
    """Any proper prefix of a marker at the end of a text: a marker that may be arriving.
    Searched for, it is found where the longest such prefix starts."""
    combined: re.Pattern[str] | None
    """All markers in one pattern, longest first, when none is a single character: the
    quickest way through a short stretch of new text."""


@lru_cache(maxsize=64)
def _searchers(markers: tuple[str, ...]) -> _Search:
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
    combined = None
    if markers and min(len(m) for m in markers) > 1:
        combined = re.compile("|".join(map(re.escape, sorted(markers, key=len, reverse=True))))
    arriving = re.compile(f"(?:{_prefix_pattern(markers)})\\Z")
    return _Search(tuple(searchers), width, arriving, combined)


def _prefix_pattern(markers: Sequence[str]) -> str:
    """A pattern for every proper prefix of the markers, as a tree of their characters."""
    following: dict[str, list[str]] = {}
    for marker in markers:
        if len(marker) > 1:
            following.setdefault(marker[0], []).append(marker[1:])
    return "|".join(
        re.escape(char)
        + (f"(?:{_prefix_pattern(rests)})?" if any(len(r) > 1 for r in rests) else "")
        for char, rests in sorted(following.items())
    )


class ScanMemo:
    """The searches made over the texts of one reply that is still arriving."""

    def __init__(self) -> None:
        self._seen: dict[tuple[tuple[str, ...], int, str], tuple[str, Found]] = {}
        self.scanned = 0
        """Characters searched so far: the work done."""
        self.saved: dict[str, tuple[str, object]] = {}
        """What a format saved about a text, by name, to go on from it (see `resume`)."""
        self._tokens: list[Token[ScanMemo | None]] = []

    def __enter__(self) -> ScanMemo:
        """Let `find_first`, `resume` and `save` use this memo inside the block."""
        self._tokens.append(_MEMO.set(self))
        return self

    def __exit__(self, *exc_info: object) -> None:
        _MEMO.reset(self._tokens.pop())

    def find_first(self, text: str, markers: tuple[str, ...], start: int) -> Found:
        """As the module's `find_first`, going on from an earlier search of a prefix."""
        key = (markers, start, text[start : start + _HEAD])
        resume = start
        found: Found = None
        seen = self._seen.get(key)
        if seen is not None and len(text) >= len(seen[0]) and text.startswith(seen[0]):
            # A marker before `resume` lies wholly inside the earlier text: it was seen.
            resume = max(start, len(seen[0]) - _searchers(markers).width + 1)
            found = seen[1] if seen[1] is not None and seen[1][0] < resume else None
        if found is None:
            found = _search(text, markers, resume)
            self.scanned += max(0, len(text) - resume)
        if len(self._seen) >= _LIMIT:
            self._seen.clear()
        self._seen[key] = (text, found)
        return found


_MEMO: ContextVar[ScanMemo | None] = ContextVar("textcalls_scan_memo", default=None)


def resume(name: str, text: str) -> object | None:
    """What was saved under `name` for a text that `text` starts with, inside a `ScanMemo`."""
    memo = _MEMO.get()
    saved = memo.saved.get(name) if memo is not None else None
    if saved is None or len(text) < len(saved[0]) or not text.startswith(saved[0]):
        return None
    return saved[1]


def save(name: str, text: str, state: object) -> None:
    """Keep `state` about `text` under `name`, inside a `ScanMemo` (else do nothing)."""
    memo = _MEMO.get()
    if memo is not None:
        memo.saved[name] = (text, state)


def find_first(text: str, markers: Sequence[str], start: int = 0) -> Found:
    """The earliest occurrence of any marker at or after `start`: (index, marker)."""
    memo = _MEMO.get()
    if memo is not None:
        return memo.find_first(text, tuple(markers), start)
    return _search(text, tuple(markers), start)


def _search(text: str, markers: tuple[str, ...], start: int) -> Found:
    search = _searchers(markers)
    if search.combined is not None and len(text) - start <= _SHORT:
        match = search.combined.search(text, start)
        return (match.start(), match.group()) if match else None
    best: Found = None
    for searcher in search.searchers:
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
    search = _searchers(tuple(markers))
    found = search.arriving.search(text, max(0, len(text) - search.width + 1))
    return 0 if found is None else len(text) - found.start()


def settled_end(text: str, markers: Sequence[str], start: int = 0) -> int:
    """Where the text that is certainly not markup ends.

    That is at the first marker, or else before a possible marker prefix at the end.
    """
    return settled_span(text, markers, start)[0]


def settled_span(text: str, markers: Sequence[str], start: int = 0) -> tuple[int, bool]:
    """As `settled_end`, and whether a marker ends the settled text there."""
    found = find_first(text, markers, start)
    if found is not None:
        return found[0], True
    return max(start, len(text) - held_back(text, markers)), False


def watch(text: str, markers: Sequence[str], start: int = 0) -> Watch:
    """Markers that are not in `text`, to look for in a longer text from where they may begin."""
    return tuple(markers), max(start, len(text) - held_back(text, markers))


def go_on(quiet: Quiet, text: str) -> tuple[Quiet, int] | None:
    """`quiet` for `text`, a longer text than it was made for; and how much of it was looked at.

    `None` when a watched marker appears: then only reading the text again can tell.
    Only the text from each watch's position on is looked at: the new text, and the
    possible marker prefix before it.
    """
    watches: list[Watch] = []
    end = length = len(text)
    looked = 0
    for markers, since in quiet.watch:
        search = _searchers(markers)
        if search.combined is not None and length - since <= _SHORT:
            if search.combined.search(text, since) is not None:
                return None
        elif _search(text, markers, since) is not None:
            return None
        looked += length - since
        arriving = search.arriving.search(text, max(since, length - search.width + 1))
        since = length if arriving is None else arriving.start()
        watches.append((markers, since))
        end = min(end, since)
    return Quiet(quiet.grows, end, tuple(watches)), looked
