"""`RetryingModel`: send a request again when the failure may pass.

Whether a failure may pass is data on the error (`ModelError.retryable`), set where the
provider's error entered harness: 408, 409, 425, 429, 500, 502, 503, 504 and 529, broken
connections, timeouts, unreadable answers and retryable error events inside a stream. A
400, 401, 403, 404 or 422 (and a context overflow) fails at once: its message says what to
fix, and sending it again would not help.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable

from harness.core.events import ModelRetry
from harness.errors import ConfigError, ModelAPIError, ModelError
from harness.gateway.model import (
    Model,
    ModelRequest,
    ModelResponse,
    StreamEvent,
    WrapperModel,
)
from harness.gateway.wrappers._shared import closing, error_fields, notify, with_request_id

__all__ = ["RetryingModel"]

Sleep = Callable[[float], Awaitable[object]]
"""Waits the given seconds; `asyncio.sleep` unless a test injects its own."""


class RetryingModel(WrapperModel):
    """A `Model` that retries its inner model's retryable failures, with backoff.

    Every attempt sends the same request id (one is made when the request has none), and
    every retry is told to the request's observer as a `model_retry` notice with the
    request id, the attempt that failed, the status, the error and the delay.

    A stream is retried only while it has yielded nothing: once the caller received a
    delta, a failure propagates, since the caller cannot take back what it was given.

    The wait before retry `n` (1-based) is drawn uniformly from
    `[0, min(max_delay_s, base_delay_s * 2 ** (n - 1))]` ("full jitter"), unless the server
    said how long to wait (`Retry-After`, `retry-after-ms`): then exactly that. A server
    asking for more than `max_retry_after_s` is not waited for: the error is raised at once,
    so that a `FallbackModel` can move on.

    When it gives up, the last error is raised as it was, with a note saying why.

    Args:
        inner: The model to call.
        max_retries: Attempts after the first; 0 turns retrying off.
        base_delay_s: The upper bound of the first wait; it doubles with each retry.
        max_delay_s: The upper bound of any drawn wait.
        max_retry_after_s: The longest `Retry-After` that is waited for.
        sleep: Waits between attempts; inject one to test without waiting.
        random: Draws the jitter in `[0, 1)`; inject one to test its bounds.

    Raises:
        ConfigError: A negative count or delay.
    """

    def __init__(
        self,
        inner: Model,
        *,
        max_retries: int = 3,
        base_delay_s: float = 0.5,
        max_delay_s: float = 30.0,
        max_retry_after_s: float = 60.0,
        sleep: Sleep = asyncio.sleep,
        random: Callable[[], float] = random.random,
    ) -> None:
        if max_retries < 0 or min(base_delay_s, max_delay_s, max_retry_after_s) < 0:
            raise ConfigError(
                "RetryingModel: max_retries and the delays must be 0 or more, not "
                f"max_retries={max_retries}, base_delay_s={base_delay_s}, "
                f"max_delay_s={max_delay_s}, max_retry_after_s={max_retry_after_s}"
            )
        super().__init__(inner)
        self.max_retries = max_retries
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s
        self.max_retry_after_s = max_retry_after_s
        self._sleep = sleep
        self._random = random

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send the request until it succeeds or fails for good.

        Raises:
            ModelError: A failure that is not retryable, or the last one when the attempts
                are spent or the server asked for too long a wait.
        """
        request = with_request_id(request)
        attempt = 1
        while True:
            try:
                return await self._inner.request(request)
            except ModelError as exc:
                delay = self._plan_retry(request, exc, attempt)
                if delay is None:
                    raise
            await self._sleep(delay)
            attempt += 1

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream the response, retrying failures that come before the first event.

        Raises:
            ModelError: As `request`, or any failure after the first event was yielded.
        """
        request = with_request_id(request)
        attempt = 1
        while True:
            started = False
            try:
                async with closing(self._inner.stream(request)) as events:
                    async for event in events:
                        started = True
                        yield event
                return
            except ModelError as exc:
                delay = None if started else self._plan_retry(request, exc, attempt)
                if delay is None:
                    raise
            await self._sleep(delay)
            attempt += 1

    def _backoff_s(self, retry: int) -> float:
        """A wait before retry number `retry` (1-based), with full jitter."""
        ceiling = min(self.max_delay_s, self.base_delay_s * 2 ** (retry - 1))
        return self._random() * ceiling

    def _plan_retry(self, request: ModelRequest, error: ModelError, attempt: int) -> float | None:
        """The wait before the next attempt, told to the observer; `None` to give up."""
        if not error.retryable:
            return None
        if attempt > self.max_retries:
            error.add_note(f"{self.name}: gave up after {attempt} attempt(s)")
            return None
        retry_after = error.retry_after if isinstance(error, ModelAPIError) else None
        if retry_after is not None and retry_after > self.max_retry_after_s:
            error.add_note(
                f"{self.name}: the server asked to wait {retry_after:g} s, more than "
                f"max_retry_after_s={self.max_retry_after_s:g}; not retried"
            )
            return None
        delay = self._backoff_s(attempt) if retry_after is None else retry_after
        notice = ModelRetry(
            request_id=request.request_id,
            model=self.name,
            attempt=attempt,
            max_attempts=self.max_retries + 1,
            **error_fields(error),
            delay_s=delay,
            retry_after_s=retry_after,
        )
        notify(request, notice)
        return delay
