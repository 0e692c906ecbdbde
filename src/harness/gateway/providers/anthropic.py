"""`AnthropicModel`: Claude through the Anthropic Messages API and its official SDK.

The SDK does the HTTP, the SSE decoding and the status checks; harness does the rest. Its
typed answers are turned back into plain JSON (with the API's own field names) before they
are read, so `_anthropic_wire` reads every block type, known or new, with the same few rules.
SDK errors are translated into harness errors here, once.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any, cast

import httpx2  # noqa: TID251 - the SDK's transport; its errors escape the SDK mid-stream
from anthropic import (  # noqa: TID251 - this module is where the SDK lives
    AnthropicError,
    APIConnectionError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    AsyncAnthropic,
)
from anthropic.types import Message as WireMessage  # noqa: TID251
from anthropic.types import MessageParam, RawMessageStreamEvent  # noqa: TID251

from harness.core.ids import new_id
from harness.core.unicode import clean_json
from harness.errors import (
    ConfigError,
    ModelConnectionError,
    ModelError,
    ModelResponseError,
    ModelTimeoutError,
)
from harness.gateway.model import ModelRequest, ModelResponse, ResponseDone, StreamEvent
from harness.gateway.providers import _anthropic_errors, _anthropic_wire

__all__ = ["AnthropicModel"]

_NO_KEY = "not-needed"
"""Sent to a server of the user's choosing when no key is configured (the SDK needs one)."""
_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


class AnthropicModel:
    """A `Model` behind the Anthropic Messages API (`POST /v1/messages`).

    Args:
        model: The model name, e.g. `claude-sonnet-4-5`.
        base_url: The API root, e.g. `http://127.0.0.1:8080`; `None` for Anthropic's own
            (or `ANTHROPIC_BASE_URL`).
        api_key: The key; `None` takes the SDK's (`ANTHROPIC_API_KEY`, …). A server given by
            `base_url` (or `ANTHROPIC_BASE_URL`) gets a placeholder when there is none.
        timeout_s: Seconds to wait for an answer (for a stream: between two reads).
        label: The model's `name` in events and logs; defaults to `anthropic:{model}`.
        max_output_tokens: `max_tokens` of a request whose settings set no
            `max_output_tokens` (the API requires one).

    The SDK's own retries are off: retrying is the job of a wrapping `Model`. Thinking,
    tool choice, prompt caching and other API fields go in `ModelSettings.extra_body`,
    e.g. `{"thinking": {"type": "enabled", "budget_tokens": 2048}}`.

    Raises:
        ConfigError: No API key was given or found for Anthropic's own API, or a credentials
            profile that the environment names cannot be read.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 600.0,
        label: str | None = None,
        max_output_tokens: int = 4096,
    ) -> None:
        if max_output_tokens < 1:
            raise ConfigError(
                f"max_output_tokens must be at least 1, not {max_output_tokens}: it is the "
                "answer's token budget when a request sets none"
            )
        self._model = model
        self._label = label
        self._timeout_s = timeout_s
        self._max_output_tokens = max_output_tokens
        self._client = _client(model, base_url=base_url, api_key=api_key, timeout_s=timeout_s)

    @property
    def name(self) -> str:
        """The label given at construction, or `anthropic:{model}`."""
        return self._label or f"anthropic:{self._model}"

    @property
    def base_url(self) -> str:
        """The API root requests go to, without a trailing slash."""
        return str(self._client.base_url).rstrip("/")

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send one request and return the whole response.

        Raises:
            ModelError: The request failed; see `harness.errors` for the kinds.
        """
        request_id = request.request_id or new_id("req")
        params = self._params(request)
        try:
            answer = await self._client.messages.create(
                model=self._model,
                max_tokens=params.pop("max_tokens"),
                messages=_messages(params),
                stream=False,
                extra_headers={"X-Request-ID": request_id},
                extra_body=params,
            )
        except (AnthropicError, ValueError) as exc:
            raise self._translate(exc, request_id) from exc
        # Despite its type, the SDK returns the body text when the answer is not JSON.
        if not isinstance(cast(object, answer), WireMessage):
            raise self._unreadable(f"the answer is not JSON: {str(answer)[:200]!r}", request_id)
        try:
            return _anthropic_wire.parse_message(_plain(answer), request_id=request_id)
        except ValueError as exc:
            raise self._unreadable(str(exc), request_id) from exc

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send one request and yield its deltas as they arrive, then `ResponseDone`.

        Raises:
            ModelError: The request failed, the stream carried an error event, or it ended
                before the answer was complete.
        """
        request_id = request.request_id or new_id("req")
        params = self._params(request)
        assembler = _anthropic_wire.MessageAssembler()
        try:
            events = await self._client.messages.create(
                model=self._model,
                max_tokens=params.pop("max_tokens"),
                messages=_messages(params),
                stream=True,
                extra_headers={"X-Request-ID": request_id},
                extra_body=params,
            )
            async with events:
                async for event in events:
                    for delta in assembler.add_event(_plain(event)):
                        yield delta
        except (AnthropicError, httpx2.TransportError, ValueError) as exc:
            raise self._translate(exc, request_id) from exc
        if not assembler.saw_start:
            raise self._unreadable("the stream ended without a message_start event", request_id)
        if not assembler.saw_stop_reason:
            raise self._unreadable("the stream ended before the answer was complete", request_id)
        yield ResponseDone(response=assembler.finish(request_id=request_id))

    async def aclose(self) -> None:
        """Close the HTTP connections; the model cannot be used afterwards."""
        await self._client.close()

    async def __aenter__(self) -> AnthropicModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        return _anthropic_wire.request_params(request, max_tokens=self._max_output_tokens)

    def _translate(self, exc: Exception, request_id: str) -> ModelError:
        """The harness error for an exception raised by the SDK or while parsing."""
        if isinstance(exc, APITimeoutError | httpx2.TimeoutException):
            return ModelTimeoutError(
                f"no answer from {self.base_url} within {self._timeout_s:g} s: raise the "
                "profile's timeout, or stream the answer",
                request_id=request_id,
            )
        if isinstance(exc, APIConnectionError):
            return self._connection_error(exc.__cause__, exc.message, request_id)
        if isinstance(exc, httpx2.TransportError):  # raised while a stream is read
            return self._connection_error(exc, str(exc), request_id)
        if isinstance(exc, APIStatusError) and exc.status_code < 400:
            return _anthropic_errors.stream_error(exc.body, request_id=request_id)
        if isinstance(exc, APIStatusError):
            headers = {key.lower(): value for key, value in exc.response.headers.items()}
            return _anthropic_errors.status_error(
                exc.status_code,
                headers,
                exc.response.text,
                base_url=self.base_url,
                model=self._model,
                request_id=request_id,
            )
        if isinstance(exc, APIResponseValidationError):
            return self._unreadable(exc.message, request_id)
        return self._unreadable(f"{type(exc).__name__}: {exc}", request_id)

    def _connection_error(
        self, cause: BaseException | None, said: str, request_id: str
    ) -> ModelError:
        reason = f"{type(cause).__name__}: {cause}" if cause else said
        if cause is not None and "connect" in type(cause).__name__.lower():
            return ModelConnectionError(
                f"could not connect to {self.base_url} ({reason}): check the network, or "
                "fix the profile's base_url",
                request_id=request_id,
            )
        return ModelConnectionError(
            f"the connection to {self.base_url} failed ({reason}): check the network",
            request_id=request_id,
        )

    def _unreadable(self, reason: str, request_id: str) -> ModelResponseError:
        return ModelResponseError(
            f"could not understand the answer of {self.base_url} for model "
            f"'{self._model}': {reason}",
            request_id=request_id,
        )


def _client(
    model: str, *, base_url: str | None, api_key: str | None, timeout_s: float
) -> AsyncAnthropic:
    """The SDK client, with its retries off and credentials that it can use.

    Raises:
        ConfigError: There are no credentials for Anthropic's own API.
    """
    api_key = api_key or None
    own_server = base_url is not None or bool(os.environ.get("ANTHROPIC_BASE_URL"))
    if api_key is None and own_server and not _key_in_environment():
        api_key = _NO_KEY
    try:
        client = AsyncAnthropic(
            api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0
        )
    except AnthropicError as exc:  # a credentials profile named by the environment
        raise ConfigError(f"no usable credentials for Anthropic model '{model}': {exc}") from exc
    if client.api_key is None and client.auth_token is None and client.credentials is None:
        raise ConfigError(
            f"no API key for Anthropic model '{model}': set ANTHROPIC_API_KEY (or the "
            "variable named by the model profile's api_key_env), or pass api_key"
        )
    return client


def _key_in_environment() -> bool:
    return any(os.environ.get(name) for name in _KEY_VARIABLES)


def _messages(params: dict[str, Any]) -> list[MessageParam]:
    """Take the messages out of `params`, typed for the SDK (the rest goes as extra_body)."""
    return cast("list[MessageParam]", params.pop("messages"))


def _plain(value: WireMessage | RawMessageStreamEvent) -> dict[str, Any]:
    """The JSON the server sent, with its field names, back from the SDK's typed object.

    Lone surrogates are replaced: a signed thinking block that held one no longer matches
    its signature, but could not be sent back as it came either (requests are UTF-8).
    """
    return clean_json(value.to_dict(mode="json", warnings=False))
