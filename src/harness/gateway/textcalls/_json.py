"""JSON reading for call markup: strict decoding, the two unambiguous repairs, and scans.

Repairs are limited to what has one reading: a Markdown code fence around the JSON, and
commas before a closing bracket. Anything else is reported, never guessed.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

__all__ = [
    "balanced_end",
    "decode_at",
    "describe",
    "dumps",
    "is_cut_off",
    "loads",
    "loads_repaired",
    "normalize_arguments",
    "scan_object",
]

_FENCE: Final = re.compile(r"\A\s*```[A-Za-z0-9_-]*[ \t]*\n?(?P<body>.*?)\n?[ \t]*```\s*\Z", re.S)
_CLOSERS: Final = {"{": "}", "[": "]"}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"the number {text[:40]} is too large for JSON")
    return number


_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite)


def decode_at(text: str, pos: int) -> tuple[Any, int]:
    """The JSON value starting at `pos` and the index just after it.

    Raises:
        ValueError: No valid JSON value starts there (`json.JSONDecodeError` for syntax).
    """
    try:
        return _DECODER.raw_decode(text, pos)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None


def loads(text: str) -> Any:
    """The one JSON value `text` holds, surrounding whitespace allowed."""
    start = len(text) - len(text.lstrip())
    value, end = decode_at(text, start)
    if text[end:].strip():
        raise json.JSONDecodeError("Extra data after the JSON value", text, end)
    return value


def loads_repaired(text: str) -> tuple[Any, bool]:
    """`loads`, retried after the unambiguous repairs; also says whether one was needed.

    Raises:
        ValueError: The first error, when no repair helps.
    """
    try:
        return loads(text), False
    except ValueError as error:
        first = error
    fenced = _FENCE.match(text)
    candidates = [fenced.group("body")] if fenced else []
    candidates += [fixed for c in [*candidates, text] if (fixed := _drop_trailing_commas(c))]
    for candidate in candidates:
        try:
            return loads(candidate), True
        except ValueError:
            continue
    raise first


def _drop_trailing_commas(text: str) -> str | None:
    """`text` without commas that stand right before `}` or `]` (outside strings)."""
    out: list[str] = []
    changed, in_string, escaped = False, False, False
    for index, char in enumerate(text):
        if in_string:
            in_string = char != '"' or escaped
            escaped = char == "\\" and not escaped
        elif char == '"':
            in_string = True
        elif char == "," and text[index + 1 :].lstrip()[:1] in ("}", "]"):
            changed = True
            continue
        out.append(char)
    return "".join(out) if changed else None


def balanced_end(text: str, pos: int) -> int | None:
    """The index after the bracket that closes the one at `pos`, skipping strings.

    `None` when the text ends first.
    """
    stack: list[str] = []
    in_string, escaped = False, False
    for index in range(pos, len(text)):
        char = text[index]
        if in_string:
            in_string = char != '"' or escaped
            escaped = char == "\\" and not escaped
        elif char == '"':
            in_string = True
        elif char in _CLOSERS:
            stack.append(_CLOSERS[char])
        elif stack and char == stack[-1]:
            stack.pop()
            if not stack:
                return index + 1
    return None


def scan_object(text: str) -> dict[str, tuple[str, bool]]:
    """The top-level members of a JSON object that may be cut off: raw value, complete?

    Reads as far as the text allows and stops at the first member it cannot read.
    """
    members: dict[str, tuple[str, bool]] = {}
    index = _skip(text, 0)
    if text[index : index + 1] != "{":
        return members
    index += 1
    while True:
        index = _skip(text, index, ",")
        try:
            key, index = decode_at(text, index)
        except ValueError:
            return members
        index = _skip(text, index)
        if text[index : index + 1] != ":" or not isinstance(key, str):
            return members
        index = _skip(text, index + 1)
        try:
            _, end = decode_at(text, index)
        except ValueError:
            if index < len(text):
                members[key] = (text[index:], False)
            return members
        members[key] = (text[index:end], True)
        index = end


def _skip(text: str, index: int, extra: str = "") -> int:
    while index < len(text) and (text[index].isspace() or text[index] in extra):
        index += 1
    return index


def dumps(value: Any) -> str:
    """Compact-enough JSON text that keeps non-ASCII characters readable."""
    return json.dumps(value, ensure_ascii=False)


def normalize_arguments(value: Any) -> str:
    """Arguments as the JSON text of a call: objects as they are, JSON in a string decoded.

    A string holding a serialized object is decoded once (Granite and others double-encode);
    any other string stays a JSON string, so the tool reports that it needs an object.
    """
    if value is None:
        return "{}"
    if isinstance(value, str):
        try:
            decoded = loads(value)
        except ValueError:
            return dumps(value)
        return dumps(decoded) if isinstance(decoded, dict) else dumps(value)
    return dumps(value)


def is_cut_off(text: str, error: ValueError) -> bool:
    """Whether decoding `text` failed only because the text ended too early."""
    if not isinstance(error, json.JSONDecodeError):
        return False
    return error.pos >= len(text.rstrip()) or error.msg.startswith("Unterminated string")


def describe(text: str, error: ValueError) -> str:
    """A short account of why `text` is not JSON, pointing at the place."""
    if is_cut_off(text, error):
        return "the JSON ends before it is complete (a closing bracket or quote is missing)"
    if isinstance(error, json.JSONDecodeError):
        here = text[max(0, error.pos - 30) : error.pos + 30].replace("\n", " ")
        return f"the JSON is not valid: {error.msg} at character {error.pos}, near {here!r}"
    return f"the JSON is not valid: {error}"
