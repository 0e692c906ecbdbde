"""Turning tool return values into text, and cutting long text down to size."""

from __future__ import annotations

import json
import sys
from typing import Any, Final

__all__ = ["NO_OUTPUT", "render_result", "truncate"]

NO_OUTPUT: Final = "(no output)"
"""What the model sees when a tool returns `None` or an empty string."""

_MIN_KEPT: Final = 20
"""Below this many kept characters a cut note would crowd out the text itself."""

_LINE_SNAP: Final = 0.2
"""A cut moves to a line break when that loses at most this share of the kept text."""


def truncate(text: str, max_chars: int) -> tuple[str, int]:
    """Shorten `text` to at most `max_chars` characters, keeping its head and its tail.

    The middle is replaced by a line that says how many characters were cut, so the model
    knows that something is missing. Cuts fall on line breaks when one is near.

    Args:
        text: The text to shorten.
        max_chars: The most characters the result may have (the cut note included).

    Returns:
        The shortened text and the number of characters of `text` that were cut
        (0 when `text` already fits).
    """
    if max_chars < 0:
        raise ValueError(f"max_chars must be >= 0, got {max_chars}")
    if len(text) <= max_chars:
        return text, 0
    budget = max_chars - len(_cut_note(len(text), len(text)))
    if budget < _MIN_KEPT:
        return text[:max_chars], len(text) - max_chars
    head = _snap_head(text[: budget - budget // 2])
    tail = _snap_tail(text[len(text) - budget // 2 :])
    cut = len(text) - len(head) - len(tail)
    return head + _cut_note(cut, len(text)) + tail, cut


def _cut_note(cut: int, total: int) -> str:
    return f"\n[... {cut:,} of {total:,} characters cut ...]\n"


def _snap_head(head: str) -> str:
    """End the head at its last line break, when that is close to the end."""
    newline = head.rfind("\n")
    if newline >= 0 and len(head) - newline - 1 <= len(head) * _LINE_SNAP:
        return head[:newline]
    return head


def _snap_tail(tail: str) -> str:
    """Start the tail after its first line break, when that is close to the start."""
    newline = tail.find("\n")
    if newline >= 0 and newline + 1 <= len(tail) * _LINE_SNAP:
        return tail[newline + 1 :]
    return tail


def render_result(value: object) -> str:
    """Turn a tool's return value into the text the model reads.

    Strings are kept as they are, `None` and `""` become `(no output)`, pydantic models,
    dataclasses, dicts, lists and the like become JSON, and anything else becomes `str()`.

    Args:
        value: What the tool function returned.

    Returns:
        The text of the result.
    """
    if value is None:
        return NO_OUTPUT
    if isinstance(value, str):
        return value or NO_OUTPUT
    if type(value) in _SCALARS:  # the usual numbers, without asking pydantic about them
        return str(value)
    if _is_structured(value):
        return _to_json(value)
    return str(value)


_SCALARS: Final = frozenset({int, float, bool})
"""Return types that are written with `str()` as they are (exactly these, not subclasses)."""


def _is_structured(value: object) -> bool:
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        return True
    if hasattr(type(value), "__dataclass_fields__"):
        return True
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(value, pydantic.BaseModel)


def _to_json(value: object) -> str:
    from pydantic_core import to_jsonable_python

    try:
        data: Any = to_jsonable_python(value, fallback=str)
        return json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return str(value)
