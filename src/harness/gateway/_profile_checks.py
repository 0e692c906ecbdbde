"""The checks a model profile must pass on its own: each names the key it is about."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Literal, get_args

from harness.gateway.pricing import Prices

if TYPE_CHECKING:
    from harness.gateway.profiles import ModelProfile

__all__ = ["PROVIDERS", "Provider", "problems", "tool_call_formats"]

Provider = Literal["openai", "anthropic"]
"""A wire protocol: `openai` covers every OpenAI-compatible server."""

PROVIDERS: tuple[str, ...] = get_args(Provider)
"""Every provider a profile may name."""


def tool_call_formats() -> tuple[str, ...]:
    """The formats `tool_calls = "text:FORMAT"` may name, from `harness.gateway.textcalls`."""
    from harness.gateway.textcalls import FORMATS

    return tuple(FORMATS)


def problems(profile: ModelProfile) -> list[tuple[str, str]]:
    """What is wrong with a profile, as (key, problem) pairs; empty when nothing is."""
    found: list[tuple[str, str]] = []
    if profile.provider not in PROVIDERS:
        found.append(
            (
                "provider",
                f"unknown provider {profile.provider!r}: use one of "
                f"{', '.join(PROVIDERS)} (openai covers every OpenAI-compatible server)",
            )
        )
    if not profile.model:
        found.append(("model", "must not be empty: give the model name the server knows"))
    if profile.base_url is not None and not profile.base_url.startswith(("http://", "https://")):
        found.append(("base_url", f"{profile.base_url!r} is not an http(s) URL"))
    found += _positive(profile)
    found += _ranges(profile)
    found += _price_problems(profile.prices)
    found += _context_problems(profile)
    problem = _tool_calls_problem(profile.tool_calls)
    if problem:
        found.append(("tool_calls", problem))
    return found


def _positive(profile: ModelProfile) -> list[tuple[str, str]]:
    values: Sequence[tuple[str, float | None]] = (
        ("context_window", profile.context_window),
        ("max_output_tokens", profile.max_output_tokens),
        ("timeout_s", profile.timeout_s),
        ("concurrency", profile.concurrency),
    )
    return [
        (key, f"must be greater than 0, not {value}")
        for key, value in values
        if value is not None and value <= 0
    ]


def _ranges(profile: ModelProfile) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    if profile.max_retries < 0:
        problems.append(("max_retries", f"must be 0 or more, not {profile.max_retries}"))
    if profile.temperature is not None and profile.temperature < 0:
        problems.append(("temperature", f"must be 0 or more, not {profile.temperature}"))
    if profile.top_p is not None and not 0 < profile.top_p <= 1:
        problems.append(("top_p", f"must be in (0, 1], not {profile.top_p}"))
    return problems


def _price_problems(prices: Prices | None) -> list[tuple[str, str]]:
    if prices is None:
        return []
    values = (
        ("prices.input", prices.input),
        ("prices.output", prices.output),
        ("prices.cached_input", prices.cached_input),
    )
    return [
        (key, f"a price cannot be negative, not {value}: give US dollars per million tokens")
        for key, value in values
        if value is not None and value < 0
    ]


def _context_problems(profile: ModelProfile) -> list[tuple[str, str]]:
    context = profile.context
    shares = (
        ("trim_at", context.trim_at),
        ("summarize_at", context.summarize_at),
        ("stage_at", context.stage_at),
    )
    found = [
        (f"context.{key}", f"must be a share of the context window in (0, 1], not {value}")
        for key, value in shares
        if value is not None and not 0 < value <= 1
    ]
    given = [(key, value) for key, value in shares if value is not None]
    for (low, low_value), (high, high_value) in pairwise(given):
        if low_value > high_value:
            found.append(
                (f"context.{high}", f"must not be below {low} ({low_value}), not {high_value}")
            )
    keep = context.keep_last_turns
    if keep is not None and keep < 1:
        found.append(("context.keep_last_turns", f"must be at least 1, not {keep}"))
    return found


def _tool_calls_problem(mode: str) -> str | None:
    if mode in ("native", "auto"):
        return None
    formats = tool_call_formats()
    if mode.startswith("text:") and mode.removeprefix("text:") in (*formats, "auto"):
        return None
    return (
        f"unknown tool call mode {mode!r}: use 'native', 'auto' or 'text:FORMAT' with FORMAT "
        f"one of {', '.join(formats)} (or 'text:auto' to detect it)"
    )
