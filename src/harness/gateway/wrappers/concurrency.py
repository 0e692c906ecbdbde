"""`ConcurrencyLimitedModel`: at most N requests in flight to one model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Protocol

from harness.errors import ConfigError
from harness.gateway.model import (
    Model,
    ModelRequest,
    ModelResponse,
    StreamEvent,
    WrapperModel,
)
from harness.gateway.wrappers._shared import closing

__all__ = ["ConcurrencyLimitedModel", "Limiter"]


class Limiter(Protocol):
    """Anything used as `async with limiter:` to hold one slot, e.g. an `asyncio.Semaphore`."""

    async def __aenter__(self) -> object:
        """Wait for a slot and take it."""
        ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
        /,
    ) -> bool | None:
        """Give the slot back."""
        ...


class ConcurrencyLimitedModel(WrapperModel):
    """A `Model` that lets at most `limit` requests reach its inner model at once.

    Further requests wait for a slot, in arrival order. A stream holds its slot until it
    ends or the caller closes it. To share one limit between several wrappers (e.g. every
    agent using the same local server), pass the same `Limiter` to each, or the `limiter`
    of the first wrapper to the others.

    Put it inside a `RetryingModel` (`RetryingModel(ConcurrencyLimitedModel(model, 4))`), so
    that a request waiting to retry gives its slot to another.

    Args:
        inner: The model to call.
        limit: The number of slots, or a limiter to share.

    Raises:
        ConfigError: `limit` is an integer below 1.
    """

    def __init__(self, inner: Model, limit: int | Limiter) -> None:
        if isinstance(limit, int):
            if limit < 1:
                raise ConfigError(f"a concurrency limit must be at least 1, not {limit}")
            limit = asyncio.Semaphore(limit)
        super().__init__(inner)
        self._limiter = limit

    @property
    def limiter(self) -> Limiter:
        """The limiter in use; give it to other wrappers to share the limit."""
        return self._limiter

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Wait for a slot, then send the request."""
        async with self._limiter:
            return await self._inner.request(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Wait for a slot, then stream the response, holding the slot to the end."""
        async with self._limiter, closing(self._inner.stream(request)) as events:
            async for event in events:
                yield event
