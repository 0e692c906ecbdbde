"""`ProfiledModel`: a model with its profile's defaults, prices and capabilities applied."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from harness.gateway.model import (
    Model,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ResponseDone,
    StreamEvent,
    WrapperModel,
)

if TYPE_CHECKING:
    from harness.gateway.profiles import ModelProfile

__all__ = ["ProfiledModel", "find_profile", "merge_settings"]


def find_profile(model: Model) -> ModelProfile | None:
    """The profile of the model a stack sends to first, or `None` for a model without one.

    Looks through the wrappers (anything with an `inner` model) to the `ProfiledModel`;
    through a `FallbackModel` (anything with `models`), to its first model's.
    """
    current: object = model
    for _ in range(32):  # a wrapper that wraps itself must not loop forever
        if current is None:
            return None
        if isinstance(current, ProfiledModel):
            return current.profile
        members: object = getattr(current, "models", None)
        if isinstance(members, Sequence) and members:
            current = cast(Sequence[object], members)[0]
        else:
            current = getattr(current, "inner", None)
    return None


def merge_settings(defaults: ModelSettings, settings: ModelSettings) -> ModelSettings:
    """`settings`, with the values it leaves unset taken from `defaults`.

    Unset is `None`, or no stop sequences; `extra_body` fields are merged, those of
    `settings` winning.
    """
    values: dict[str, Any] = {}
    for item in dataclasses.fields(ModelSettings):
        own = getattr(settings, item.name)
        values[item.name] = getattr(defaults, item.name) if own in (None, ()) else own
    if defaults.extra_body and settings.extra_body:
        values["extra_body"] = {**defaults.extra_body, **settings.extra_body}
    return ModelSettings(**values)


class ProfiledModel(WrapperModel):
    """A `Model` that serves requests the way its profile says.

    - The profile's sampling settings are the defaults of every request; a request's own
      settings win.
    - Each response names its profile (`ModelResponse.profile`) and, when the profile
      declares prices, carries them (`ModelResponse.prices`) with `usage.cost_usd` priced
      from them (a free profile leaves the cost the provider reported).
    - When the profile says the server cannot stream, `stream` sends one whole request and
      yields its `ResponseDone`.
    - When the profile says the server has no native structured output
      (`structured_output = false`), a request's `response_format` is not sent.

    Args:
        inner: The model to send requests to.
        profile: The profile whose settings, prices and capabilities apply.
    """

    def __init__(self, inner: Model, profile: ModelProfile) -> None:
        super().__init__(inner)
        self._profile = profile
        self._defaults = profile.settings

    @property
    def profile(self) -> ModelProfile:
        """The profile this model follows."""
        return self._profile

    @property
    def context_window(self) -> int | None:
        """The profile's context window, when known."""
        return self._profile.context_window

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send `request` with the profile's defaults and return the priced response."""
        return self._priced(await self._inner.request(self._with_defaults(request)))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream `request` with the profile's defaults; the final response is priced."""
        if not self._profile.streaming:
            yield ResponseDone(response=await self.request(request))
            return
        events = self._inner.stream(self._with_defaults(request))
        try:
            async for event in events:
                if isinstance(event, ResponseDone):
                    yield ResponseDone(response=self._priced(event.response))
                else:
                    yield event
        finally:
            if isinstance(events, AsyncGenerator):
                await events.aclose()

    def _with_defaults(self, request: ModelRequest) -> ModelRequest:
        settings = merge_settings(self._defaults, request.settings)
        if settings.response_format is not None and not self._profile.structured_output:
            settings = dataclasses.replace(settings, response_format=None)
        return dataclasses.replace(request, settings=settings)

    def _priced(self, response: ModelResponse) -> ModelResponse:
        prices, name = self._profile.prices, self._profile.name
        if prices is None or prices.free:
            return dataclasses.replace(response, profile=name, prices=prices)
        usage = dataclasses.replace(response.usage, cost_usd=prices.cost(response.usage))
        return dataclasses.replace(response, usage=usage, profile=name, prices=prices)
