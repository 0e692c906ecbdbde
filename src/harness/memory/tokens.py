"""Token counts: the provider's reported usage for what was sent, an estimate for the rest.

No tokenizer works offline for every model a profile may name (tiktoken downloads its
vocabularies, and local models bring their own), so text is estimated from its pieces:
words, digit runs, punctuation, whitespace and CJK characters each cost what they
typically cost in a byte-pair vocabulary, which makes prose, code, JSON and CJK text come
out at their usual densities without telling them apart. A `TokenCounter` then learns
from every reported `input_tokens` how far the estimate is off for this model and
scales later estimates by that ratio (bounded and smoothed).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from harness.core.messages import Message, ToolDefinition

__all__ = ["TokenCounter", "estimate_text"]

_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_LATIN_CHARS = "A-Za-z\u00c0-\u024f"
_LATIN: Final = re.compile(f"[{_LATIN_CHARS}]+")
_LATIN_LONG: Final = re.compile(f"[{_LATIN_CHARS}]{{6,}}")
_DIGITS: Final = re.compile(r"\d{1,3}")
_SPACE_DIGIT: Final = re.compile(r" (?=\d)")
_SPACES: Final = re.compile(r"\s{2,}|[^\S ]")
_SYMBOLS: Final = re.compile(r"[!-/:-@\[-`{-~]{1,2}")
_SAMPLE_CHARS: Final = 4096
"""Texts longer than four samples are estimated from three samples, scaled to their length."""

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
    if len(text) <= 4 * _SAMPLE_CHARS:
        return _estimate_pieces(text)
    middle = (len(text) - _SAMPLE_CHARS) // 2
    samples = (
        text[:_SAMPLE_CHARS],
        text[middle : middle + _SAMPLE_CHARS],
        text[-_SAMPLE_CHARS:],
    )
    return sum(_estimate_pieces(s) for s in samples) * len(text) / (3 * _SAMPLE_CHARS)


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


def _estimate_message(message: Message) -> float:
    total = MESSAGE_OVERHEAD + estimate_text(message.content) + estimate_text(message.reasoning)
    for call in message.tool_calls:
        total += CALL_OVERHEAD + estimate_text(call.name) + estimate_text(call.arguments)
    if message.tool_call_id:
        total += estimate_text(message.tool_call_id)
    if message.provider_data:
        total += estimate_text(json.dumps(message.provider_data, default=str))
    return total


def _estimate_tools(tools: Sequence[ToolDefinition]) -> float:
    return sum(
        TOOL_OVERHEAD
        + estimate_text(t.name)
        + estimate_text(t.description)
        + estimate_text(json.dumps(t.parameters, default=str))
        for t in tools
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class _Sent:
    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...]
    reported: int


class TokenCounter:
    """Counts a request's tokens: the reported usage of what was sent, plus an estimate.

    After each model response, call `observe` with what was sent and the reported
    `input_tokens`. A later `count` of a conversation that starts with those messages
    (and has the same tools) is the reported number plus an estimate of the new messages
    only. Observations also calibrate the estimate in two parts: a ratio of real to
    estimated tokens, learned from what each request added to the one before (so fixed
    costs cancel out), moved toward each sample by a weight that grows with its size and
    kept within `[min_ratio, max_ratio]`; and an offset for what the server adds that no
    message shows (chat templates, tool instructions), the part of the last reported count
    that the ratio does not explain (never below zero).

    Args:
        ratio: The starting ratio of real to estimated tokens.
        min_ratio: The lowest ratio calibration may reach.
        max_ratio: The highest ratio calibration may reach.
        cache_size: Messages whose estimate is remembered (counted once, not every step).
    """

    def __init__(
        self,
        *,
        ratio: float = 1.0,
        min_ratio: float = 0.5,
        max_ratio: float = 2.5,
        cache_size: int = 4096,
    ) -> None:
        if not 0 < min_ratio <= ratio <= max_ratio:
            raise ValueError(
                f"need 0 < min_ratio <= ratio <= max_ratio, got {min_ratio}, {ratio}, {max_ratio}"
            )
        self._ratio, self._min, self._max = ratio, min_ratio, max_ratio
        self._offset = 0.0
        self._cache: OrderedDict[int, tuple[Message, float]] = OrderedDict()
        self._cache_size = cache_size
        self._tools: tuple[tuple[ToolDefinition, ...], float] = ((), 0.0)
        self._sent: _Sent | None = None
        self.samples = 0
        """How many observations calibrated the ratio."""

    @property
    def ratio(self) -> float:
        """Real tokens per estimated token, as learned so far."""
        return self._ratio

    @property
    def offset(self) -> int:
        """Tokens the server adds to every request beyond the estimate, as learned so far."""
        return math.ceil(self._offset)

    def count(self, messages: Sequence[Message], tools: Sequence[ToolDefinition] = ()) -> int:
        """Tokens of a request with these messages and tools.

        Uses the last reported count when the request extends what was sent then.
        """
        sent = self._sent
        if sent is not None and self._extends(sent, messages, tools):
            rest = sum(self._raw(m) for m in messages[len(sent.messages) :])
            return sent.reported + math.ceil(rest * self._ratio)
        return self.estimate(messages, tools)

    def estimate(self, messages: Sequence[Message], tools: Sequence[ToolDefinition] = ()) -> int:
        """Calibrated estimate of a request's tokens, ignoring any reported count."""
        return math.ceil(self._raw_request(messages, tools) * self._ratio + self._offset)

    def message_tokens(self, message: Message) -> int:
        """Calibrated estimate of the tokens one message adds to a request."""
        return math.ceil(self._raw(message) * self._ratio)

    def counted(self, message: Message, reported: int = 0) -> Message:
        """`message` with its `tokens` and `tokens_source` set, unless it has a count.

        Args:
            message: The message.
            reported: The provider's count for it (an assistant message's output tokens);
                0 or less means none, and the calibrated estimate is used.
        """
        if message.tokens is not None:
            return message
        if reported > 0:
            return dataclasses.replace(message, tokens=reported, tokens_source="reported")
        tokens = self.message_tokens(message)
        return dataclasses.replace(message, tokens=tokens, tokens_source="estimated")

    def text_tokens(self, text: str | None) -> int:
        """Calibrated estimate of the tokens of a text."""
        return math.ceil(estimate_text(text) * self._ratio)

    def observe(
        self,
        sent: Sequence[Message],
        tools: Sequence[ToolDefinition],
        reported_input_tokens: int,
    ) -> None:
        """Learn from the input tokens the provider reported for a request.

        Args:
            sent: The messages of the request, exactly as sent.
            tools: The tools of the request.
            reported_input_tokens: The provider's `input_tokens` (cached ones included);
                0 or less means it reported none, and is ignored.
        """
        if reported_input_tokens <= 0:
            return
        previous = self._sent
        if previous is not None and self._extends(previous, sent, tools):
            added = sum(self._raw(m) for m in sent[len(previous.messages) :])
            self._calibrate(reported_input_tokens - previous.reported, added)
        raw = self._raw_request(sent, tools)
        self._offset = max(0.0, reported_input_tokens - raw * self._ratio)
        self._sent = _Sent(messages=tuple(sent), tools=tuple(tools), reported=reported_input_tokens)

    def _calibrate(self, real: int, raw: float) -> None:
        if real <= 0 or raw < 1:
            return
        sample = min(self._max, max(self._min, real / raw))
        weight = min(0.5, raw / (raw + 200))
        self._ratio += weight * (sample - self._ratio)
        self.samples += 1

    @staticmethod
    def _extends(sent: _Sent, messages: Sequence[Message], tools: Sequence[ToolDefinition]) -> bool:
        n = len(sent.messages)
        return (
            len(messages) >= n
            and tuple(tools) == sent.tools
            and tuple(messages[:n]) == sent.messages
        )

    def _raw_request(self, messages: Sequence[Message], tools: Sequence[ToolDefinition]) -> float:
        return REQUEST_OVERHEAD + self._raw_tools(tools) + sum(self._raw(m) for m in messages)

    def _raw(self, message: Message) -> float:
        key = id(message)
        hit = self._cache.get(key)
        if hit is not None and hit[0] is message:
            self._cache.move_to_end(key)
            return hit[1]
        raw = _estimate_message(message)
        self._cache[key] = (message, raw)
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return raw

    def _raw_tools(self, tools: Sequence[ToolDefinition]) -> float:
        key = tuple(tools)
        if key != self._tools[0]:
            self._tools = (key, _estimate_tools(key))
        return self._tools[1]
