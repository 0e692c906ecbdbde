"""Resilience as `Model`s that wrap a `Model`: retries, fallbacks, concurrency limits.

They compose; the usual order, outermost first::

    model = FallbackModel(
        [
            RetryingModel(ConcurrencyLimitedModel(local, 2)),
            RetryingModel(hosted),
        ],
        context_windows=[8192, 128_000],
    )

Retries and fallbacks are told to the request's `observer` (`model_retry`,
`model_fallback`), which the agent loop records as run events.
"""

from harness.gateway.wrappers.concurrency import ConcurrencyLimitedModel, Limiter
from harness.gateway.wrappers.fallback import FallbackModel, estimate_request_tokens
from harness.gateway.wrappers.retrying import RetryingModel

__all__ = [
    "ConcurrencyLimitedModel",
    "FallbackModel",
    "Limiter",
    "RetryingModel",
    "estimate_request_tokens",
]
