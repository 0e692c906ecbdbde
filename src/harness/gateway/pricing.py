"""Prices of a model, and what a response cost in US dollars."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.core.usage import Usage

__all__ = ["Prices", "prices_from_dict", "prices_to_dict"]

_PER = 1_000_000


@dataclass(frozen=True, kw_only=True, slots=True)
class Prices:
    """US dollars per million tokens; all zero (the default) means free or unknown."""

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
        cached_price = self.input if self.cached_input is None else self.cached_input
        dollars = (
            (usage.input_tokens - cached) * self.input
            + cached * cached_price
            + usage.output_tokens * self.output
        )
        return dollars / _PER


def prices_to_dict(prices: Prices | None) -> dict[str, float | None] | None:
    """`prices` as JSON-compatible data for an event (`None` stays `None`: unknown)."""
    if prices is None:
        return None
    return {"input": prices.input, "output": prices.output, "cached_input": prices.cached_input}


def prices_from_dict(data: Mapping[str, Any] | None) -> Prices | None:
    """The prices `prices_to_dict` wrote, or `None` for unknown (or unreadable) prices."""
    if not data:
        return None
    try:
        cached = data.get("cached_input")
        return Prices(
            input=float(data.get("input") or 0.0),
            output=float(data.get("output") or 0.0),
            cached_input=None if cached is None else float(cached),
        )
    except (TypeError, ValueError):
        return None
