"""The one interface of the model gateway: a `Model` answers a `ModelRequest`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from harness.core.messages import Message, ToolDefinition
from harness.core.usage import Usage

__all__ = [
    "FinishReason",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "ReasoningDelta",
    "ResponseDone",
    "StreamEvent",
    "TextDelta",
    "ToolCallDelta",
]

FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "refusal", "other"]
"""Why the model stopped, normalised across providers."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelSettings:
    """Sampling and size settings for one request; `None` leaves the server's default."""

    temperature: float | None = None
    """Sampling temperature."""
    top_p: float | None = None
    """Nucleus sampling mass."""
    max_output_tokens: int | None = None
    """Upper bound on generated tokens."""
    seed: int | None = None
    """Seed for servers that support reproducible sampling."""
    stop: tuple[str, ...] = ()
    """Stop sequences."""
    parallel_tool_calls: bool | None = None
    """Whether the model may call several tools in one turn."""
    extra_body: dict[str, Any] | None = None
    """Provider-specific fields added to the request body as they are."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelRequest:
    """Everything a model needs for one turn."""

    messages: tuple[Message, ...]
    """The conversation so far, system prompt first."""
    tools: tuple[ToolDefinition, ...] = ()
    """Tools the model may call; empty means a turn without tools."""
    settings: ModelSettings = field(default_factory=ModelSettings)
    """Sampling and size settings."""
    request_id: str | None = None
    """Sent as `X-Request-ID`; retries of the same request keep it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelResponse:
    """A model's answer, normalised."""

    message: Message
    """The assistant message: content, reasoning and tool calls."""
    finish_reason: FinishReason
    """Why the model stopped."""
    usage: Usage = field(default_factory=Usage)
    """Tokens reported by the provider for this request."""
    model: str | None = None
    """The model name the provider reported."""
    refusal: str | None = None
    """The provider's refusal text, when the model refused."""
    request_id: str | None = None
    """The request id sent with the request."""
    raw_finish_reason: str | None = None
    """The finish reason exactly as the provider sent it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TextDelta:
    """A piece of answer text, as it arrives."""

    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ReasoningDelta:
    """A piece of reasoning text, as it arrives."""

    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallDelta:
    """A fragment of a tool call; fragments with the same `index` belong together."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class ResponseDone:
    """The last event of every stream: the whole response, assembled."""

    response: ModelResponse


StreamEvent = TextDelta | ReasoningDelta | ToolCallDelta | ResponseDone


@runtime_checkable
class Model(Protocol):
    """A language model behind any provider.

    Wrappers such as retry, fallback and concurrency limits are `Model`s that wrap a `Model`.
    """

    @property
    def name(self) -> str:
        """A short label such as `openai:gpt-4.1-mini`, for events and logs."""
        ...

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send one request and return the whole response."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send one request and yield events as they arrive, ending with `ResponseDone`."""
        ...
