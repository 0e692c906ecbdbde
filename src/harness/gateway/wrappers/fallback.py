"""`FallbackModel`: when one model cannot answer, ask the next."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Sequence
from typing import Any

from harness.core.events import ModelFallback
from harness.errors import ConfigError, ContextOverflowError, ModelError
from harness.gateway.model import Model, ModelRequest, ModelResponse, StreamEvent, close_model
from harness.gateway.tokens import estimate_request
from harness.gateway.wrappers._shared import closing, error_fields, notify, with_request_id

__all__ = ["FallbackModel", "estimate_request_tokens"]


class FallbackModel:
    """A `Model` that tries its models in order until one answers.

    It moves to the next model when the current one fails with a retryable error (wrap
    each model in a `RetryingModel`: then that means its retries are spent), when the
    server says the request is too long for its context window, or, before sending, when
    the request's estimated size (`estimate_request_tokens`) exceeds the model's known
    context window. Other failures (400, 401, 403, 404, 422) are raised at once: another
    model would not fix the request or the credentials. The last model is always tried,
    since the estimate is rough and its server has the last word.

    A stream moves on only while it has yielded nothing, like `RetryingModel`.

    Each move is told to the request's observer as a `model_fallback` notice with the
    request id, the two model names, the reason (`error`, `context_overflow` or
    `context_window`), the status and error when there was one, and `delay_s` (always 0).
    Every model receives the same request id.

    Args:
        models: The models, in order of preference.
        context_windows: Each model's context window in tokens, `None` where unknown.

    Raises:
        ConfigError: No models, or a `context_windows` of another length.
    """

    def __init__(
        self, models: Sequence[Model], *, context_windows: Sequence[int | None] | None = None
    ) -> None:
        if not models:
            raise ConfigError("FallbackModel needs at least one model")
        windows = tuple(context_windows) if context_windows is not None else (None,) * len(models)
        if len(windows) != len(models):
            raise ConfigError(
                f"FallbackModel got {len(models)} models but {len(windows)} context windows: "
                "give one per model, None where unknown"
            )
        self.models = tuple(models)
        self.context_windows = windows

    @property
    def name(self) -> str:
        """`fallback:` and the names of the models, in order."""
        return "fallback:" + ",".join(model.name for model in self.models)

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Ask each model in turn until one answers.

        Raises:
            ModelError: The error of the last model tried, or one that no other model
                would fix.
        """
        request = with_request_id(request)
        for index, model in enumerate(self.models[:-1]):
            if self._skips(request, index):
                continue
            try:
                return await model.request(request)
            except ModelError as exc:
                if not self._moves_on(request, index, exc):
                    raise
        return await self.models[-1].request(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream from each model in turn until one answers; see `request`."""
        request = with_request_id(request)
        for index, model in enumerate(self.models[:-1]):
            if self._skips(request, index):
                continue
            started = False
            try:
                async with closing(model.stream(request)) as events:
                    async for event in events:
                        started = True
                        yield event
                return
            except ModelError as exc:
                if started or not self._moves_on(request, index, exc):
                    raise
        async with closing(self.models[-1].stream(request)) as events:
            async for event in events:
                yield event

    async def aclose(self) -> None:
        """Close every model, even when closing one of them fails (the first error is raised)."""
        errors: list[Exception] = []
        for model in self.models:
            try:
                await close_model(model)
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    def _skips(self, request: ModelRequest, index: int) -> bool:
        """Whether the request is too long for model `index` (telling the observer so)."""
        window = self.context_windows[index]
        if window is None:
            return False
        estimate = estimate_request_tokens(request)
        if estimate <= window:
            return False
        self._notify(
            request,
            index,
            "context_window",
            None,
            {"estimated_tokens": estimate, "context_window": window},
        )
        return True

    def _moves_on(self, request: ModelRequest, index: int, error: ModelError) -> bool:
        """Whether `error` of model `index` sends the request on (telling the observer so)."""
        if isinstance(error, ContextOverflowError):
            self._notify(request, index, "context_overflow", error)
            return True
        if error.retryable:
            self._notify(request, index, "error", error)
            return True
        return False

    def _notify(
        self,
        request: ModelRequest,
        index: int,
        reason: str,
        error: ModelError | None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        notice = ModelFallback(
            request_id=request.request_id,
            from_model=self.models[index].name,
            to_model=self.models[index + 1].name,
            reason=reason,
            **error_fields(error),
            delay_s=0.0,
            **(extra or {}),
        )
        notify(request, notice)


def estimate_request_tokens(request: ModelRequest) -> int:
    """An estimate of the tokens a request takes in the context window.

    The library's one estimator (`harness.gateway.tokens`, uncalibrated: no usage has been
    reported for the model yet) for the messages, tool calls and tool schemas, plus the
    answer's budget (`settings.max_output_tokens`) when it is set.
    """
    estimate = math.ceil(estimate_request(request.messages, request.tools))
    return estimate + (request.settings.max_output_tokens or 0)
