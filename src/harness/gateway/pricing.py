"""Prices of a model, and what a response cost in US dollars."""

from __future__ import annotations

from dataclasses import dataclass

from harness.core.usage import Usage

__all__ = ["Prices"]

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
