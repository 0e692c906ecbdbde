"""`OpenAIModel`: any OpenAI-compatible chat-completions server, through the official SDK.

The SDK does the HTTP, the SSE decoding and the status checks; harness does the rest. Its
typed answers are turned back into plain JSON before they are read, because servers
(llama.cpp, vLLM, Ollama, Mistral, Gemini …) add, omit and retype fields, and plain JSON
lets `_openai_wire` read all of them with the same few rules. SDK errors are translated into
harness errors here, once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

from openai import (  # noqa: TID251 - this module is where the SDK lives
    APIConnectionError,
    APIError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    AsyncOpenAI,
    OpenAIError,
)
from openai.types.chat import (  # noqa: TID251
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessageParam,
)

from harness.core.ids import new_id
from harness.core.unicode import clean_json
from harness.errors import (
    ModelConnectionError,
    ModelError,
    ModelResponseError,
    ModelTimeoutError,
)
from harness.gateway.model import ModelRequest, ModelResponse, ResponseDone, StreamEvent
from harness.gateway.providers import _openai_errors, _openai_wire

__all__ = ["OpenAIModel"]

_NO_KEY = "not-needed"
"""Sent when no key is configured: local servers ignore it, and the SDK requires one."""


class OpenAIModel:
    """A `Model` behind an OpenAI-compatible `/chat/completions` endpoint.

    Args:
        model: The model name the server knows, e.g. `gpt-4.1-mini` or `qwen3:8b`.
        base_url: The API root, e.g. `http://localhost:8080/v1`; `None` for OpenAI's.
        api_key: The key; `None` sends a placeholder, which local servers accept.
        timeout_s: Seconds to wait for an answer (for a stream: between two reads).
        label: The model's `name` in events and logs; defaults to `openai:{model}`.

    The SDK's own retries are off: retrying is the job of a wrapping `Model`.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 600.0,
        label: str | None = None,
    ) -> None:
        self._model = model
        self._label = label
        self._timeout_s = timeout_s
        self._client = AsyncOpenAI(
            api_key=api_key or _NO_KEY, base_url=base_url, timeout=timeout_s, max_retries=0
        )

    @property
    def name(self) -> str:
        """The label given at construction, or `openai:{model}`."""
        return self._label or f"openai:{self._model}"

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
        params = _openai_wire.request_params(request)
        messages = _messages(params)
        try:
            completion = await self._client.chat.completions.create(
                model=self._model,
                messages=messages,
                stream=False,
                extra_headers={"X-Request-ID": request_id},
                extra_body=params,
            )
        except (OpenAIError, ValueError) as exc:
            raise self._translate(exc, request_id) from exc
        # Despite its type, the SDK returns the body text when the answer is not JSON.
        if not isinstance(cast(object, completion), ChatCompletion):
            raise self._unreadable(f"the answer is not JSON: {str(completion)[:200]!r}", request_id)
        try:
            return _openai_wire.parse_completion(_plain(completion), request_id=request_id)
        except ValueError as exc:
            raise self._unreadable(str(exc), request_id) from exc

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send one request and yield its deltas as they arrive, then `ResponseDone`.

        Raises:
            ModelError: The request failed, or the stream carried an error event.
        """
        request_id = request.request_id or new_id("req")
        params = _openai_wire.request_params(request)
        messages = _messages(params)
        assembler = _openai_wire.StreamAssembler()
        try:
            chunks = await self._client.chat.completions.create(
                model=self._model,
                messages=messages,
                stream=True,
                stream_options={"include_usage": True},
                extra_headers={"X-Request-ID": request_id},
                extra_body=params,
            )
            async with chunks:
                async for chunk in chunks:
                    for event in assembler.add_chunk(_plain(chunk)):
                        yield event
        except (OpenAIError, ValueError) as exc:
            raise self._translate(exc, request_id) from exc
        if not assembler.saw_chunk:
            raise self._unreadable("the stream ended without a single chunk", request_id)
        yield ResponseDone(response=assembler.finish(request_id=request_id))

    async def aclose(self) -> None:
        """Close the HTTP connections; the model cannot be used afterwards."""
        await self._client.close()

    async def __aenter__(self) -> OpenAIModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _translate(self, exc: Exception, request_id: str) -> ModelError:
        """The harness error for an exception raised by the SDK or while parsing."""
        if isinstance(exc, APITimeoutError):
            return ModelTimeoutError(
                f"no answer from {self.base_url} within {self._timeout_s:g} s: the server "
                "may still be loading the model or generating; raise the profile's "
                "timeout, or check the server",
                request_id=request_id,
            )
        if isinstance(exc, APIConnectionError):
            return self._connection_error(exc, request_id)
        if isinstance(exc, APIStatusError):
            headers = {key.lower(): value for key, value in exc.response.headers.items()}
            return _openai_errors.status_error(
                exc.status_code,
                headers,
                exc.response.text,
                base_url=self.base_url,
                model=self._model,
                request_id=request_id,
            )
        if isinstance(exc, APIError) and not isinstance(exc, APIResponseValidationError):
            return _openai_errors.stream_error(exc.body, exc.message, request_id=request_id)
        return self._unreadable(f"{type(exc).__name__}: {exc}", request_id)

    def _connection_error(self, exc: APIConnectionError, request_id: str) -> ModelError:
        cause = exc.__cause__
        reason = f"{type(cause).__name__}: {cause}" if cause else exc.message
        if cause is not None and "connect" in type(cause).__name__.lower():
            return ModelConnectionError(
                f"could not connect to {self.base_url} ({reason}): start the model server "
                "or fix the profile's base_url; for a local model, e.g. llama.cpp: "
                "`llama-server -m MODEL.gguf --jinja --port 8080`",
                request_id=request_id,
            )
        return ModelConnectionError(
            f"the connection to {self.base_url} failed ({reason}): check that the server "
            "is still running",
            request_id=request_id,
        )

    def _unreadable(self, reason: str, request_id: str) -> ModelResponseError:
        return ModelResponseError(
            f"could not understand the answer of {self.base_url} for model "
            f"'{self._model}': {reason}",
            request_id=request_id,
        )


def _messages(params: dict[str, Any]) -> list[ChatCompletionMessageParam]:
    """Take the messages out of `params`, typed for the SDK (the rest goes as extra_body)."""
    return cast("list[ChatCompletionMessageParam]", params.pop("messages"))


def _plain(value: ChatCompletion | ChatCompletionChunk) -> dict[str, Any]:
    """The JSON the server sent, back from the SDK's typed object, lone surrogates replaced."""
    return clean_json(value.model_dump(warnings=False, exclude_unset=True))
