"""Models that answer from a script or a function, with no server behind them.

They ship with the library (re-exported by `harness.testing`) so that tests, demos and
benchmarks run the real loop, tools and runtime with only the model replaced.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, Final, TypeAlias

from harness.core._frozen import builder
from harness.core.ids import new_id
from harness.core.messages import Message, ToolCall
from harness.core.usage import Usage
from harness.errors import ConfigError
from harness.gateway.model import (
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)

__all__ = ["FunctionModel", "Reply", "ScriptedModel", "call", "estimate_tokens", "reply"]

Reply: TypeAlias = ModelResponse | Message | str
"""What a script step may give: a full response, an assistant message, or plain text."""

ReplyFunction: TypeAlias = Callable[[ModelRequest], Reply | Awaitable[Reply]]

_REPLIES: Final = (ModelResponse, Message, str)

_response = builder(ModelResponse)
_usage = builder(Usage)
_tool_call = builder(ToolCall)


def estimate_tokens(text: str | None) -> int:
    """A rough token count (4 characters a token) for models that report none."""
    return (len(text) + 3) // 4 if text else 0


def call(
    name: str, arguments: dict[str, Any] | str | None = None, *, id: str | None = None
) -> ToolCall:
    """A tool call for a script; dict arguments are encoded as JSON."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return _tool_call(id=id or new_id("call"), name=name, arguments=raw)


def reply(text: str | None = None, *calls: ToolCall, reasoning: str | None = None) -> Message:
    """An assistant message for a script: text, tool calls, or both."""
    return Message.assistant(text, calls, reasoning=reasoning)


def _as_response(value: Reply, request: ModelRequest, model: str) -> ModelResponse:
    if isinstance(value, ModelResponse):
        return value
    message = Message.assistant(value) if isinstance(value, str) else value
    content = message.content
    output = (len(content) + 3) // 4 if content else 0  # `estimate_tokens`, written out
    for tool_call in message.tool_calls:
        output += (len(tool_call.arguments) + 3) // 4 if tool_call.arguments else 0
    return _response(
        message=message,
        finish_reason="tool_calls" if message.tool_calls else "stop",
        usage=_usage(input_tokens=_prompt_tokens(request), output_tokens=output, requests=1),
        model=model,
        request_id=request.request_id,
    )


def _prompt_tokens(request: ModelRequest) -> int:
    """`estimate_tokens` of every content and reasoning text sent.

    Written out: a call per text cost more than the sum itself.
    """
    tokens = 0
    for message in request.messages:
        if message.content:
            tokens += (len(message.content) + 3) // 4
        if message.reasoning:
            tokens += (len(message.reasoning) + 3) // 4
    return tokens


async def _stream_response(response: ModelResponse) -> AsyncIterator[StreamEvent]:
    message = response.message
    if message.reasoning:
        yield ReasoningDelta(text=message.reasoning)
    for piece in _pieces(message.content or ""):
        yield TextDelta(text=piece)
    for index, tool_call in enumerate(message.tool_calls):
        yield ToolCallDelta(index=index, id=tool_call.id, name=tool_call.name)
        for piece in _pieces(tool_call.arguments):
            yield ToolCallDelta(index=index, arguments=piece)
    yield ResponseDone(response=response)


def _pieces(text: str, size: int = 16) -> Iterable[str]:
    return (text[i : i + size] for i in range(0, len(text), size))


class FunctionModel:
    """A model whose every answer comes from a function of the request.

    The function may be sync or async and returns a `ModelResponse`, an assistant
    `Message`, or plain text. Every request received is kept in `requests`, unless
    `keep_requests` is false.

    Args:
        function: Called once per request.
        name: Label for events and logs.
        latency_s: Seconds to wait before answering, to simulate a real model.
        keep_requests: Keep each request in `requests`. A request refers to its run, so a
            model shared by many runs keeps every run alive; benchmarks turn this off.
    """

    def __init__(
        self,
        function: ReplyFunction,
        *,
        name: str = "function",
        latency_s: float = 0.0,
        keep_requests: bool = True,
    ):
        self._function = function
        self._name = name
        self.latency_s = latency_s
        self.keep_requests = keep_requests
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        """The model's label."""
        return self._name

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Answer one request from the function."""
        if self.keep_requests:
            self.requests.append(request)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        value = self._function(request)
        if not isinstance(value, _REPLIES) and inspect.isawaitable(value):
            value = await value
        return _as_response(value, request, self._name)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Answer one request, delivered in small deltas."""
        response = await self.request(request)
        async for event in _stream_response(response):
            yield event


class ScriptedModel(FunctionModel):
    """A model that gives the scripted replies in order, one per request.

    Args:
        replies: The answers, in order. Running past the end raises `ConfigError`
            naming how many replies the script had.
        name: Label for events and logs.
        latency_s: Seconds to wait before answering.
    """

    def __init__(self, replies: Sequence[Reply], *, name: str = "scripted", latency_s: float = 0.0):
        self.replies = list(replies)
        super().__init__(self._next, name=name, latency_s=latency_s)

    def _next(self, request: ModelRequest) -> Reply:
        index = len(self.requests) - 1
        if index >= len(self.replies):
            raise ConfigError(
                f"ScriptedModel {self.name!r} has {len(self.replies)} replies "
                f"but received request {index + 1}"
            )
        return self.replies[index]
