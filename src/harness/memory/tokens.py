"""Token counts: the provider's reported usage for what was sent, an estimate for the rest.

Text is estimated by the library's one estimator, `harness.gateway.tokens` (no tokenizer
works offline for every model a profile may name). A `TokenCounter` then learns
from every reported `input_tokens` how far the estimate is off for this model and
scales later estimates by that ratio (bounded and smoothed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final, NamedTuple

from harness.core.messages import Message, ToolDefinition
from harness.gateway.tokens import REQUEST_OVERHEAD, estimate_message, estimate_text, estimate_tools

__all__ = ["TokenCounter", "estimate_text"]


class _Sent(NamedTuple):
    """The last request observed (two per run: a tuple is built without a setattr a field)."""

    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...]
    reported: int
    raw_messages: float
    """The uncalibrated estimate of `messages`, summed in order (a later request that
    extends them adds its new messages to it, to the same float)."""


_Observed = tuple[tuple[Message, ...], tuple[ToolDefinition, ...], int]
"""What `TokenCounter.observe` was given: the messages, the tools, the reported count."""

_MAX_PENDING: Final = 4
"""Observations a counter keeps before it learns from them unasked (each holds a request)."""

_TOOLS_SEEN: dict[int, tuple[tuple[ToolDefinition, ...], float]] = {}
"""The estimate of recently seen tool definitions, by the identity of their tuple: a
toolset hands every run the same tuple, and its schemas cost a `json.dumps` to estimate."""
_TOOLS_SEEN_MAX: Final = 256


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

    Observations are learned from, in order, when a count first needs them: the last ones
    of a run, which nothing counts after, cost nothing, and a message's estimate needs only
    the ratio, which a first observation does not move. The numbers are those of learning
    at once: an observation reads only what was sent, and an estimate is the same whenever
    it is made.

    Args:
        ratio: The starting ratio of real to estimated tokens.
        min_ratio: The lowest ratio calibration may reach.
        max_ratio: The highest ratio calibration may reach.
        cache_size: Messages whose estimate is remembered (counted once, not every step).
    """

    __slots__ = (
        "_cache",
        "_cache_size",
        "_max",
        "_min",
        "_offset",
        "_pending",
        "_ratio",
        "_samples",
        "_sent",
        "_tools",
    )

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
        self._cache: dict[int, tuple[Message, float]] = {}
        """Estimates by the identity of their message (which it keeps alive), oldest first."""
        self._cache_size = cache_size
        self._tools: tuple[tuple[ToolDefinition, ...], float] = ((), 0.0)
        self._sent: _Sent | None = None
        self._pending: list[_Observed] = []
        """Observations not learned from yet, oldest first (at most `_MAX_PENDING`)."""
        self._samples = 0

    @property
    def samples(self) -> int:
        """How many observations calibrated the ratio."""
        self._learn()
        return self._samples

    @property
    def ratio(self) -> float:
        """Real tokens per estimated token, as learned so far."""
        self._learn_ratio()
        return self._ratio

    @property
    def offset(self) -> int:
        """Tokens the server adds to every request beyond the estimate, as learned so far."""
        self._learn()
        return math.ceil(self._offset)

    def count(self, messages: Sequence[Message], tools: Sequence[ToolDefinition] = ()) -> int:
        """Tokens of a request with these messages and tools.

        Uses the last reported count when the request extends what was sent then.
        """
        self._learn()
        sent = self._sent
        if sent is not None and self._extends(sent, messages, tools):
            rest = sum(self._raw(m) for m in messages[len(sent.messages) :])
            return sent.reported + math.ceil(rest * self._ratio)
        return self.estimate(messages, tools)

    def estimate(self, messages: Sequence[Message], tools: Sequence[ToolDefinition] = ()) -> int:
        """Calibrated estimate of a request's tokens, ignoring any reported count."""
        self._learn()
        return math.ceil(self._raw_request(messages, tools) * self._ratio + self._offset)

    def message_tokens(self, message: Message) -> int:
        """Calibrated estimate of the tokens one message adds to a request."""
        self._learn_ratio()
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
            return message.with_tokens(reported, "reported")
        self._learn_ratio()
        hit = self._cache.get(id(message))
        raw = hit[1] if hit is not None and hit[0] is message else estimate_message(message)
        counted = message.with_tokens(math.ceil(raw * self._ratio), "estimated")
        # The copy is what gets sent from now on: remember its estimate, not the original's.
        self._remember(counted, raw)
        return counted

    def text_tokens(self, text: str | None) -> int:
        """Calibrated estimate of the tokens of a text."""
        self._learn_ratio()
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
        if len(self._pending) >= _MAX_PENDING:
            self._learn()
        self._pending.append((tuple(sent), tuple(tools), reported_input_tokens))

    def _learn(self) -> None:
        """Learn from the observations not learned from yet, in order."""
        if self._pending:
            pending, self._pending = self._pending, []
            for observed in pending:
                self._learn_from(*observed)

    def _learn_ratio(self) -> None:
        """Learn what may move the ratio: any observation but a counter's first alone."""
        if self._pending and (self._sent is not None or len(self._pending) > 1):
            self._learn()

    def _learn_from(
        self,
        sent: tuple[Message, ...],
        tools: tuple[ToolDefinition, ...],
        reported_input_tokens: int,
    ) -> None:
        previous = self._sent
        if previous is not None and self._extends(previous, sent, tools):
            raws = [self._raw(m) for m in sent[len(previous.messages) :]]
            self._calibrate(reported_input_tokens - previous.reported, sum(raws))
            raw_messages = previous.raw_messages
            for raw in raws:  # as `sum` over all of them would, from the first
                raw_messages += raw
        else:
            raw_messages = sum(self._raw(m) for m in sent)
        raw = REQUEST_OVERHEAD + self._raw_tools(tools) + raw_messages
        self._offset = max(0.0, reported_input_tokens - raw * self._ratio)
        self._sent = _Sent(sent, tools, reported_input_tokens, raw_messages)

    def _calibrate(self, real: int, raw: float) -> None:
        if real <= 0 or raw < 1:
            return
        sample = min(self._max, max(self._min, real / raw))
        weight = min(0.5, raw / (raw + 200))
        self._ratio += weight * (sample - self._ratio)
        self._samples += 1

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
        hit = self._cache.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        raw = estimate_message(message)
        self._remember(message, raw)
        return raw

    def _remember(self, message: Message, raw: float) -> None:
        # Oldest out first (an evicted estimate costs only its recomputation).
        cache = self._cache
        if len(cache) >= self._cache_size:
            del cache[next(iter(cache))]
        cache[id(message)] = (message, raw)

    def _raw_tools(self, tools: Sequence[ToolDefinition]) -> float:
        key = tuple(tools)
        if key is self._tools[0] or key == self._tools[0]:
            return self._tools[1]
        seen = _TOOLS_SEEN.get(id(key))
        if seen is None or seen[0] is not key:
            seen = (key, estimate_tools(key))
            if len(_TOOLS_SEEN) >= _TOOLS_SEEN_MAX:
                _TOOLS_SEEN.clear()
            _TOOLS_SEEN[id(key)] = seen
        self._tools = seen
        return seen[1]
