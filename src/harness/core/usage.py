"""Usage counters and the limits that bound a run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from harness.core._frozen import fast_init, set_class, twin

__all__ = ["DEFAULT_TOOL_TIMEOUT", "Limits", "Prices", "Usage"]

DEFAULT_TOOL_TIMEOUT: Final = 30.0
"""Seconds a call may run when neither its tool nor `Limits.tool_timeout` says."""


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class Usage:
    """What a model call, or a whole run, consumed."""

    input_tokens: int = 0
    """Prompt tokens, cached ones included."""
    output_tokens: int = 0
    """Completion tokens, reasoning included."""
    cached_tokens: int = 0
    """Prompt tokens served from the provider's cache."""
    reasoning_tokens: int = 0
    """Completion tokens spent on reasoning."""
    requests: int = 0
    """Model requests made."""
    tool_calls: int = 0
    """Tool calls executed."""
    cost_usd: float = 0.0
    """Cost in US dollars, from the model profile's prices (0 when unknown)."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def with_tool_calls(self, count: int) -> Usage:
        """This usage plus `count` tool calls (`self + Usage(tool_calls=count)`, built once)."""
        return _usage(
            self.input_tokens,
            self.output_tokens,
            self.cached_tokens,
            self.reasoning_tokens,
            self.requests,
            self.tool_calls + count,
            self.cost_usd + 0.0,
        )

    def __add__(self, other: Usage) -> Usage:
        return _usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.requests + other.requests,
            self.tool_calls + other.tool_calls,
            self.cost_usd + other.cost_usd,
        )


_USAGE_SLOTS: Final = twin(Usage)


def _usage(
    input_tokens: int,
    output_tokens: int,
    cached_tokens: int,
    reasoning_tokens: int,
    requests: int,
    tool_calls: int,
    cost_usd: float,
) -> Usage:
    """A `Usage` built by its slots (see `core._frozen`): a run adds up several."""
    usage: Any = object.__new__(_USAGE_SLOTS)
    usage.input_tokens = input_tokens
    usage.output_tokens = output_tokens
    usage.cached_tokens = cached_tokens
    usage.reasoning_tokens = reasoning_tokens
    usage.requests = requests
    usage.tool_calls = tool_calls
    usage.cost_usd = cost_usd
    set_class(usage, Usage)
    return usage


_PER_MILLION: Final = 1_000_000


@dataclass(frozen=True, kw_only=True, slots=True)
class Prices:
    """US dollars per million tokens of one model; all zero declares it free.

    A model whose prices are not known has none (`None` where prices are expected), so
    that its cost is unknown rather than zero.
    """

    input: float = 0.0
    """Per million prompt tokens that were not served from the cache."""
    output: float = 0.0
    """Per million completion tokens, reasoning included."""
    cached_input: float | None = None
    """Per million prompt tokens served from the provider's cache; `None` charges `input`."""

    @property
    def free(self) -> bool:
        """Whether every price is zero, so that nothing is ever charged."""
        return not (self.input or self.output or self.cached_input)

    def cost(self, usage: Usage) -> float:
        """What `usage` cost: uncached input, cached input and output, each at its price.

        `usage.input_tokens` counts cached tokens too; they are charged at `cached_input`.
        """
        cached = min(usage.cached_tokens, usage.input_tokens)
        dollars = (
            (usage.input_tokens - cached) * self.input
            + cached * self.cached_price
            + usage.output_tokens * self.output
        )
        return dollars / _PER_MILLION

    @property
    def cached_price(self) -> float:
        """The price of a cached prompt token: `cached_input`, else `input`."""
        return self.input if self.cached_input is None else self.cached_input


@dataclass(frozen=True, kw_only=True, slots=True)
class Limits:
    """Bounds on one run. Defaults are on: no run is unbounded."""

    max_steps: int = 25
    """Model turns before the run stops with termination reason `max_steps`."""
    max_tokens: int | None = None
    """Total input + output tokens for the run."""
    max_cost_usd: float | None = None
    """Total cost in US dollars for the run."""
    max_seconds: float | None = 3600.0
    """Wall-clock time the run executes, summed over its resumptions and takeovers (time
    paused, queued or waiting for a takeover does not count)."""
    max_tool_calls: int | None = None
    """Tool calls for the run."""
    max_identical_failures: int = 3
    """The same tool failing the same way this many times in a row is a repeated failure."""
    tool_timeout: float | None = None
    """Seconds any tool call may run at most; `None` leaves each tool its own timeout.

    A tool call runs for the smaller of its tool's own `timeout` (`bash`: 120 s) and this;
    a tool that sets none runs for this, or 30 s (`DEFAULT_TOOL_TIMEOUT`) when this is
    `None`. A tool that stops its own work at the deadline (`bash` kills the command in its
    sandbox) reports what it did by then, as a `tool_timeout`.
    """
    max_result_chars: int = 4000
    """Characters of a tool result the model sees when the tool sets no limit of its own."""
    max_handoffs: int = 8
    """Handoffs in one run (`AgentSpec.handoffs`); a handoff beyond it is refused with a
    tool error, and the agent goes on itself."""

    def tool_seconds(self, own: float | None) -> float:
        """Seconds a call may run, for a tool whose own timeout is `own` (`None`: none)."""
        if own is None:
            return self.tool_timeout or DEFAULT_TOOL_TIMEOUT
        return own if self.tool_timeout is None else min(own, self.tool_timeout)
