"""Token estimates: what a text, a message or a request costs in a typical vocabulary.

No tokenizer works offline for every model a profile may name (tiktoken downloads its
vocabularies, and local models bring their own), so text is estimated from its pieces:
words, digit runs, punctuation, whitespace and CJK characters each cost what they
typically cost in a byte-pair vocabulary, which makes prose, code, JSON and CJK text come
out at their usual densities without telling them apart.

This is the one estimator of the library: `FallbackModel` sizes requests with it, and the
context window manager's `harness.memory.TokenCounter` calibrates it on reported usage.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Final

from harness.core.messages import Message, ToolDefinition

__all__ = [
    "CALL_OVERHEAD",
    "MESSAGE_OVERHEAD",
    "REQUEST_OVERHEAD",
    "TOOL_OVERHEAD",
    "estimate_message",
    "estimate_request",
    "estimate_text",
    "estimate_tools",
]

_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_LATIN_CHARS = "A-Za-z\u00c0-\u024f"
_LATIN: Final = re.compile(f"[{_LATIN_CHARS}]+")
_LATIN_LONG: Final = re.compile(f"[{_LATIN_CHARS}]{{6,}}")
_DIGITS: Final = re.compile(r"\d{1,3}")
_SPACE_DIGIT: Final = re.compile(r" (?=\d)")
_SPACES: Final = re.compile(r"[^\S ]\s*| \s+")
"""Runs of two or more whitespace characters, and a single one that is not a space: the
same matches as the pattern of two alternatives at each character it had before (two or
more, else one but a space), in about two-thirds of the time."""
_SYMBOLS: Final = re.compile(r"[!-/:-@\[-`{-~]{1,2}")
_SAMPLE_CHARS: Final = 4096
"""Texts longer than four samples are estimated from three samples, scaled to their length."""
_CACHED_CHARS: Final = 4096
"""Texts up to this long have their estimate remembered (see `_estimate_cached`)."""
_SCANNED_CHARS: Final = 64
"""ASCII texts up to this long are counted from their runs (`_scan`), not by six regular
expressions: call ids, tool names, short replies (23,600 instructions for a 31-character
call id, against 58,000 by the patterns and 44,000 by a loop over its characters)."""

MESSAGE_OVERHEAD: Final = 4.0
"""Role markers and separators around each message."""
CALL_OVERHEAD: Final = 8.0
"""Call id, type and brackets around each tool call."""
TOOL_OVERHEAD: Final = 8.0
"""Framing of each tool definition in the prompt."""
REQUEST_OVERHEAD: Final = 3.0
"""Tokens that prime the model's answer."""


def estimate_text(text: str | None) -> float:
    """Estimate the tokens of `text` for a typical byte-pair vocabulary, uncalibrated.

    Args:
        text: Any text: prose, code, JSON, CJK, or a mix.

    Returns:
        The estimated token count, as a float so that sums round once.
    """
    if not text:
        return 0.0
    if len(text) <= _CACHED_CHARS:
        return _estimate_cached(text)
    if len(text) <= 4 * _SAMPLE_CHARS:
        return _estimate_pieces(text)
    middle = (len(text) - _SAMPLE_CHARS) // 2
    samples = (
        text[:_SAMPLE_CHARS],
        text[middle : middle + _SAMPLE_CHARS],
        text[-_SAMPLE_CHARS:],
    )
    return sum(_estimate_pieces(s) for s in samples) * len(text) / (3 * _SAMPLE_CHARS)


@functools.lru_cache(maxsize=1024)
def _estimate_cached(text: str) -> float:
    """`_estimate_pieces` of a short text, remembered.

    Every request of a run sends its system prompt, task and earlier messages again; at
    most 1,024 texts of 4 KiB are kept.
    """
    return _estimate_pieces(text)


def _estimate_unique(text: str) -> float:
    """`estimate_text` of a text seen once (an id): remembering it would only evict others."""
    return _estimate_pieces(text) if len(text) <= _CACHED_CHARS else estimate_text(text)


@functools.cache
def _unicode_patterns() -> tuple[re.Pattern[str], ...]:
    """Patterns for non-ASCII text, compiled on first use (they take milliseconds)."""
    other = f"[^\\W\\d_{_LATIN_CHARS}{_CJK_CHARS}]"
    return (
        re.compile(f"{other}+"),
        re.compile(f"{other}{{3,}}"),
        re.compile(f"[{_CJK_CHARS}]"),
        re.compile(r"[^\x00-\x7f\w\s]"),
    )


def _estimate_pieces(text: str) -> float:
    """Each kind of piece at its usual cost, counted by regular expressions (C speed).

    Words cost one token, or one per 5.5 letters when longer (one per 3 letters in other
    alphabets); CJK characters one each; digits one per group of three, plus one for a
    space before them; whitespace other than a single space one per run (plus one per 8
    characters); ASCII punctuation one per two characters; other symbols 1.5 each.
    """
    if len(text) <= _SCANNED_CHARS and text.isascii():
        return _scan(text)
    return _matched(text)


def _matched(text: str) -> float:
    """`_estimate_pieces`, by regular expressions (C speed)."""
    total = (
        _runs(_LATIN, _LATIN_LONG, text, 5.5)
        + len(_DIGITS.findall(text))
        + len(_SPACE_DIGIT.findall(text))
        + _runs(_SPACES, None, text, 8.0)
        + len(_SYMBOLS.findall(text))
    )
    if text.isascii():
        return total
    other, other_long, cjk, wide_symbols = _unicode_patterns()
    return (
        total
        + _runs(other, other_long, text, 3.0)
        + len(cjk.findall(text))
        + 1.5 * len(wide_symbols.findall(text))
    )


def _runs(runs: re.Pattern[str], long: re.Pattern[str] | None, text: str, per: float) -> float:
    """Runs cost one token each, and the long ones one per `per` characters instead."""
    if long is None:  # whitespace: one per run, plus one per `per` characters after the first
        found = runs.findall(text)
        return len(found) + (sum(map(len, found)) - len(found)) / per
    longer = long.findall(text)
    return len(runs.findall(text)) - len(longer) + sum(map(len, longer)) / per


def _runs_table(*spans: tuple[int, int, str]) -> bytes:
    """A `bytes.translate` table that marks the codes from each `first` to `last`.

    Every other byte becomes a space, so that `split()` gives the runs of the marked ones.
    """
    table = bytearray(b" " * 256)
    for first, last, mark in spans:
        table[first : last + 1] = mark.encode() * (last - first + 1)
    return bytes(table)


_LETTER_RUNS: Final = _runs_table((0x41, 0x5A, "a"), (0x61, 0x7A, "a"))
_DIGIT_RUNS: Final = _runs_table((0x30, 0x39, "0"))
_SYMBOL_RUNS: Final = _runs_table(
    (0x21, 0x2F, "."), (0x3A, 0x40, "."), (0x5B, 0x60, "."), (0x7B, 0x7E, ".")
)
"""The ASCII characters of `_SYMBOLS`: punctuation."""
_BLANK_RUNS: Final = _runs_table((0x09, 0x0D, "t"), (0x1C, 0x1F, "t"), (0x20, 0x20, "s"))
"""ASCII whitespace (as `str.isspace` says): a space is `s`, any other `t`."""
_SPACE_DIGITS: Final = _runs_table(
    (0x30, 0x39, "0"), (0x20, 0x20, " "), (0, 0x1F, "x"), (0x21, 0x2F, "x"), (0x3A, 0xFF, "x")
)
"""Digits become `0`, a space stays, the rest is `x`: `count(b" 0")`, spaces before digits."""


def _scan(text: str) -> float:
    """`_estimate_pieces` of an ASCII text, from its runs of each kind of character.

    Each kind's runs come from one `bytes.translate` and `split` (C speed); the counts are
    added in the order of the patterns: the same float (tests/memory/test_tokens.py
    compares them on random texts).
    """
    raw = text.encode()
    words = raw.translate(_LETTER_RUNS).split()
    long_words = long_letters = 0
    for word in words:
        if len(word) >= 6:
            long_words += 1
            long_letters += len(word)
    digits = 0
    for run in raw.translate(_DIGIT_RUNS).split():
        digits += (len(run) + 2) // 3
    symbols = 0
    for run in raw.translate(_SYMBOL_RUNS).split():
        symbols += (len(run) + 1) // 2
    blanks = blank_chars = 0
    for run in raw.translate(_BLANK_RUNS).split():
        if run != b"s":  # a lone space costs nothing
            blanks += 1
            blank_chars += len(run)
    space_digits = raw.translate(_SPACE_DIGITS).count(b" 0")
    latin = len(words) - long_words + long_letters / 5.5
    return latin + digits + space_digits + (blanks + (blank_chars - blanks) / 8.0) + symbols


def estimate_message(message: Message) -> float:
    """Uncalibrated estimate of the tokens one message adds to a request."""
    content = message.content
    if not content:
        total = MESSAGE_OVERHEAD + 0.0
    elif len(content) <= _CACHED_CHARS:  # `estimate_text`, one call fewer for most messages
        total = MESSAGE_OVERHEAD + _estimate_cached(content)
    else:
        total = MESSAGE_OVERHEAD + estimate_text(content)
    if message.reasoning:
        total += estimate_text(message.reasoning)
    for call in message.tool_calls:
        total += CALL_OVERHEAD + estimate_text(call.name) + estimate_text(call.arguments)
    if message.tool_call_id:
        total += _estimate_unique(message.tool_call_id)
    if message.provider_data:
        total += estimate_text(json.dumps(message.provider_data, default=str))
    return total


def estimate_tools(tools: Sequence[ToolDefinition]) -> float:
    """Uncalibrated estimate of the tokens that tool definitions add to a request."""
    return sum(
        TOOL_OVERHEAD
        + estimate_text(t.name)
        + estimate_text(t.description)
        + estimate_text(json.dumps(t.parameters, default=str))
        for t in tools
    )


def estimate_request(messages: Sequence[Message], tools: Sequence[ToolDefinition] = ()) -> float:
    """Uncalibrated estimate of the input tokens of a request with these messages and tools."""
    return REQUEST_OVERHEAD + estimate_tools(tools) + sum(estimate_message(m) for m in messages)
