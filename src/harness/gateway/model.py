"""The one interface of the model gateway: a `Model` answers a `ModelRequest`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from harness.core._frozen import fast_init
from harness.core.messages import Message, ToolDefinition
from harness.core.usage import Usage
from harness.gateway.pricing import Prices

__all__ = [
    "FinishReason",
    "GatewayNotice",
    "Model",
    "ModelObserver",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "ReasoningDelta",
    "ResponseDone",
    "ResponseFormat",
    "StreamEvent",
    "TextDelta",
    "ToolCallDelta",
    "WrapperModel",
    "close_model",
]

FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "refusal", "other"]
"""Why the model stopped, normalised across providers."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ResponseFormat:
    """A JSON Schema the final answer must match: native structured output.

    Providers that support it constrain the answer to the schema; others ignore it (the
    agent still checks the answer and asks for repairs).
    """

    name: str
    """A short name for the schema: letters, digits, `_` and `-`, at most 64 characters."""
    schema: Mapping[str, Any]
    """The JSON Schema of the answer."""
    strict: bool = False
    """Ask for strict adherence; only for schemas that meet the provider's strict rules."""


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
    response_format: ResponseFormat | None = None
    """Ask for an answer constrained to a JSON Schema, where the provider supports it."""


if TYPE_CHECKING:
    # At run time these two are built on first use (`__getattr__` below): they name run-event
    # classes, and importing the gateway's interface should not load every event class.
    from typing import TypeAlias

    from harness.core.events import ModelFallback, ModelRetry

    GatewayNotice: TypeAlias = ModelRetry | ModelFallback
    """What a model wrapper tells the loop about: a retry, or a move to the next model."""

    ModelObserver: TypeAlias = Callable[[GatewayNotice], None]
    """Receives the gateway's notices (request id, status, delay); the loop adds the step and
    reports them as run events."""


@fast_init
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
    observer: ModelObserver | None = field(default=None, compare=False)
    """Told about retries and fallbacks by wrappers such as `RetryingModel`; `None` ignores them."""


@fast_init
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
    tool_calls_from_text: str | None = None
    """The format (`hermes`, `llama3_json`, ...) harness read this reply's tool calls from,
    when they were written as text rather than returned by the server; `None` otherwise."""
    profile: str | None = None
    """The model profile that answered (set by `ProfiledModel`; behind a `FallbackModel`,
    the fallback's); `None` for a model without a profile."""
    prices: Prices | None = None
    """The prices `usage.cost_usd` was computed with (the answering profile's); `None`
    when they are unknown, so that the cost is unknown rather than free."""


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


async def close_model(model: object) -> None:
    """Close `model` if it holds connections (has an `aclose` method); else do nothing.

    Wrappers forward `aclose` to the models they wrap with it, so that closing the
    outermost model of a stack closes its provider's HTTP client.
    """
    closer: Callable[[], Awaitable[object]] | None = getattr(model, "aclose", None)
    if closer is not None:
        await closer()


class WrapperModel:
    """Base of the models that wrap another (retries, limits, profiles, text tool calls).

    The name is the inner model's, and closing the wrapper closes the inner model; a
    subclass adds what it is for in `request` and `stream`.

    Args:
        inner: The wrapped model.
    """

    def __init__(self, inner: Model) -> None:
        self._inner = inner

    @property
    def inner(self) -> Model:
        """The wrapped model."""
        return self._inner

    @property
    def name(self) -> str:
        """The inner model's name."""
        return self._inner.name

    async def aclose(self) -> None:
        """Close the inner model, if it holds connections."""
        await close_model(self._inner)


def __getattr__(name: str) -> Any:
    if name not in ("GatewayNotice", "ModelObserver"):
        raise AttributeError(f"module 'harness.gateway.model' has no attribute {name!r}")
    from harness.core.events import ModelFallback, ModelRetry

    notice = ModelRetry | ModelFallback
    globals().update(GatewayNotice=notice, ModelObserver=Callable[[notice], None])
    return globals()[name]
