"""Finding JSON values in a model's prose: code fences, text around them, trailing commas.

Models wrap JSON in fences and sentences, leave trailing commas and add comments; a strict
`json.loads` of the whole answer fails on all of these. This module finds the outermost
bracketed values of a text and parses each leniently. It knows nothing of schemas.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["Found", "find_json"]

_SCAN_BUDGET: Final = 4_000_000
"""Characters looked at while trying brackets as starts of JSON values: a bound on the
work for answers full of brackets that never close."""
_EXCERPT: Final = 30
_FENCE: Final = re.compile(r"```[^\n`]*\n(.*?)(?:```|\Z)", re.DOTALL)
_OPEN: Final = re.compile(r"[{\[]")
_CLOSE: Final = {"{": "}", "[": "]"}

_NOTHING: Final = object()


@dataclass(kw_only=True)
class Found:
    """The JSON values of an answer, and the best account of a value that did not parse."""

    values: list[Any] = field(default_factory=list[Any])
    """The values that parsed, in the order they appear."""
    longest: int = 0
    """Length of the longest span that parsed."""
    problem: str | None = None
    """Why the longest span that did not parse is not JSON, as `$: ...`."""
    problem_size: int = -1
    """Length of the span `problem` is about: the longest one that did not parse."""

    def failed(self, size: int, problem: str) -> None:
        """Note a span of `size` characters that did not parse; the longest one is kept."""
        if size > self.problem_size:
            self.problem, self.problem_size = problem, size


def find_json(text: str) -> Found:
    """The outermost JSON values of `text`, in order, and why the others did not parse.

    A bracketed span that does not parse is looked into: the scan moves on one character
    past its start, so a valid value inside it (or after prose such as `[1]`) is found.
    """
    found = Found()
    position = spent = 0
    while spent < _SCAN_BUDGET and (bracket := _OPEN.search(text, position)):
        start = bracket.start()
        end = _closing(text, start)
        spent += (end or len(text)) - start
        value, error = _parse(text[start:end]) if end is not None else (_NOTHING, None)
        if value is _NOTHING:
            found.failed((end or len(text)) - start, error or _unclosed(text, start))
            position = start + 1
        else:
            found.values.append(value)
            found.longest = max(found.longest, end - start if end else 0)
            position = end or len(text)
    if not found.values:
        found.values = _whole_values(text)
    return found


def _whole_values(text: str) -> list[Any]:
    """A JSON value that is the whole answer or a whole code fence: a number, a string..."""
    for whole in (*(m.group(1) for m in _FENCE.finditer(text)), text):
        value, _ = _parse(whole.strip())
        if value is not _NOTHING:
            return [value]
    return []


def _closing(text: str, start: int) -> int | None:
    """The index after the bracket that closes the one at `start`.

    Brackets in strings and comments do not count. `None` when the bracket is never closed,
    or a bracket of the other kind closes it.
    """
    stack: list[str] = []
    index, length = start, len(text)
    while index < length:
        char = text[index]
        if char == '"':
            index = _string_end(text, index)
        elif text.startswith("//", index):
            index = _line_end(text, index)
        elif text.startswith("/*", index):
            index = _comment_end(text, index)
        elif char in _CLOSE:
            stack.append(_CLOSE[char])
        elif char in "}]":
            if not stack or stack.pop() != char:
                return None
            if not stack:
                return index + 1
        index += 1
    return None


def _string_end(text: str, start: int) -> int:
    """Index of the quote that ends the string opening at `start` (or the end of `text`)."""
    index = start + 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text[index] == '"':
            return index
        index += 1
    return len(text)


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end < 0 else end


def _comment_end(text: str, start: int) -> int:
    end = text.find("*/", start + 2)
    return len(text) if end < 0 else end + 1


def _parse(span: str) -> tuple[Any, str | None]:
    """The value of `span` as JSON, first strict, then without trailing commas and comments."""
    try:
        return json.loads(span), None
    except (ValueError, RecursionError) as exc:
        first = exc
    relaxed = _relax(span)
    if relaxed != span:
        try:
            return json.loads(relaxed), None
        except (ValueError, RecursionError):
            pass
    return _NOTHING, _describe(span, first)


def _relax(span: str) -> str:
    """`span` without comments and without commas right before a closing bracket."""
    out: list[str] = []
    index, length = 0, len(span)
    while index < length:
        char = span[index]
        if char == '"':
            end = _string_end(span, index)
            out.append(span[index : end + 1])
            index = end + 1
            continue
        if span.startswith("//", index):
            index = _line_end(span, index)
            continue
        if span.startswith("/*", index):
            index = _comment_end(span, index) + 1
            continue
        if char in "}]":
            _drop_trailing_comma(out)
        out.append(char)
        index += 1
    return "".join(out)


def _drop_trailing_comma(out: list[str]) -> None:
    for position in range(len(out) - 1, -1, -1):
        if out[position].isspace():
            continue
        if out[position] == ",":
            del out[position]
        return


def _describe(span: str, error: Exception) -> str:
    if isinstance(error, json.JSONDecodeError):
        at = error.pos
        before = span[max(0, at - _EXCERPT) : at]
        after = span[at : at + _EXCERPT]
        return (
            f"$: the JSON is not valid: {error.msg} at line {error.lineno}, column "
            f"{error.colno}, here: `{before}⟦HERE⟧{after}`"
        )
    return "$: the JSON is not valid: it is nested too deeply"


def _unclosed(text: str, start: int) -> str:
    return (
        f"$: the JSON value starting with `{text[start : start + _EXCERPT]}` is never "
        "closed (or its brackets do not pair up); the answer may have been cut off"
    )
