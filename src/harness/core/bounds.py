"""How deep and how large the JSON a model writes may be before anyone parses it.

Python's JSON decoder, `jsonschema` and `json.dumps` recurse once per level of nesting, so
`[` written 999 times raises `RecursionError` wherever it is parsed, validated or encoded;
orjson refuses more than 255 levels. Text from a model is measured here first, in one pass
without recursion, and refused with a message that names the limit.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MAX_JSON_CHARS", "MAX_JSON_DEPTH", "json_bound_problem", "json_depth"]

MAX_JSON_DEPTH: Final = 64
"""The deepest nesting of arrays and objects accepted in tool arguments or structured output."""

MAX_JSON_CHARS: Final = 1_000_000
"""The most characters accepted in one tool call's arguments or one structured answer."""


_TOKENS: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.S)
"""A string (to its closing quote, or the end of an unterminated one), or a bracket."""


def json_depth(text: str) -> int:
    """The deepest nesting of `[` and `{` in JSON `text`, brackets inside strings left out.

    Text that is not valid JSON is measured all the same; the decoder reports its errors.
    """
    depth = deepest = 0
    for token in _TOKENS.finditer(text):  # strings are skipped whole, at C speed
        char = token.group()
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(0, depth - 1)
    return deepest


def json_bound_problem(text: str, *, what: str = "the arguments") -> str | None:
    """Which bound `text` exceeds, as a sentence for the model, or `None` if it fits."""
    if len(text) > MAX_JSON_CHARS:
        return f"{what}: {len(text):,} characters, more than the {MAX_JSON_CHARS:,} accepted"
    brackets = text.count("[") + text.count("{")
    depth = json_depth(text) if brackets > MAX_JSON_DEPTH else 0
    if depth > MAX_JSON_DEPTH:
        return (
            f"{what}: nested {depth:,} levels deep, more than the {MAX_JSON_DEPTH} levels of "
            "arrays and objects accepted"
        )
    return None
