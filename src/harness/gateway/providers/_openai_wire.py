"""The OpenAI chat-completions wire format, to and from harness messages.

Pure functions over plain JSON values, with no SDK import. A whole completion is read as
one chunk whose `message` plays the part of a stream `delta`, so a response gives the same
`Message` whether it arrived in one piece or in a hundred.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.core.messages import Message, ToolCall, ToolDefinition
from harness.core.usage import Usage
from harness.gateway.model import (
    FinishReason,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ReasoningDelta,
    ResponseFormat,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from harness.gateway.providers._values import JSON, as_dict, as_int, as_list, as_text, json_excerpt

__all__ = ["StreamAssembler", "map_finish_reason", "parse_completion", "request_params"]


_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}
_PROVIDER_KEY = "openai"
"""Key of `Message.provider_data` holding fields that must go back to the server."""


# --- request ------------------------------------------------------------------------------


def request_params(request: ModelRequest) -> JSON:
    """The JSON body of a chat-completions request, without `model` and `stream`."""
    params: JSON = {"messages": [_message_to_wire(m) for m in request.messages]}
    if request.tools:
        params["tools"] = [_tool_to_wire(t) for t in request.tools]
    params.update(_settings_to_wire(request.settings, has_tools=bool(request.tools)))
    return params


def _message_to_wire(message: Message) -> JSON:
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.content or "",
        }
    wire: JSON = {"role": message.role}
    if message.content is not None or not message.tool_calls:
        wire["content"] = message.content or ""
    replay = as_dict((message.provider_data or {}).get(_PROVIDER_KEY))
    if message.tool_calls:
        call_extras = as_dict(replay.get("tool_calls"))
        wire["tool_calls"] = [
            _call_to_wire(c, as_dict(call_extras.get(c.id))) for c in message.tool_calls
        ]
    wire.update(as_dict(replay.get("message")))
    return wire


def _call_to_wire(call: ToolCall, extra: JSON) -> JSON:
    function = {"name": call.name, "arguments": call.arguments}
    return {"id": call.id, "type": "function", "function": function, **extra}


def _tool_to_wire(tool: ToolDefinition) -> JSON:
    function = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    return {"type": "function", "function": function}


def _settings_to_wire(settings: ModelSettings, *, has_tools: bool) -> JSON:
    wire: JSON = {}
    named = {
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "max_tokens": settings.max_output_tokens,
        "seed": settings.seed,
    }
    wire.update({key: value for key, value in named.items() if value is not None})
    if settings.stop:
        wire["stop"] = list(settings.stop)
    # OpenAI rejects parallel_tool_calls in a request without tools.
    if settings.parallel_tool_calls is not None and has_tools:
        wire["parallel_tool_calls"] = settings.parallel_tool_calls
    if settings.response_format is not None:
        wire["response_format"] = _response_format_to_wire(settings.response_format)
    wire.update(settings.extra_body or {})
    return wire


def _response_format_to_wire(response_format: ResponseFormat) -> JSON:
    schema = {
        "name": response_format.name,
        "schema": dict(response_format.schema),
        "strict": response_format.strict,
    }
    return {"type": "json_schema", "json_schema": schema}


# --- response -----------------------------------------------------------------------------


def parse_completion(body: JSON, *, request_id: str | None) -> ModelResponse:
    """Normalise a non-streaming completion body.

    Raises:
        ValueError: The body has no choice to read.
    """
    choices = as_list(body.get("choices"))
    if not choices:
        raise ValueError(f"the completion has no choices: {json_excerpt(body)}")
    choice = next((c for c in choices if as_dict(c).get("index", 0) == 0), choices[0])
    choice = as_dict(choice)
    assembler = StreamAssembler()
    chunk = {**body, "choices": [{**choice, "index": 0, "delta": as_dict(choice.get("message"))}]}
    for _ in assembler.add_chunk(chunk):
        pass
    return assembler.finish(request_id=request_id)


@dataclass
class _CallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list[str])
    extra: JSON = field(default_factory=dict[str, Any])


@dataclass
class StreamAssembler:
    """Accumulates chat-completion chunks (choice 0 only) into one `ModelResponse`."""

    saw_chunk: bool = False
    """Whether at least one chunk arrived."""
    _content: list[str] = field(default_factory=list[str])
    _reasoning: list[str] = field(default_factory=list[str])
    _refusal: list[str] = field(default_factory=list[str])
    _calls: dict[int, _CallParts] = field(default_factory=dict[int, _CallParts])
    _message_extra: JSON = field(default_factory=dict[str, Any])
    _finish: str | None = None
    _usage: JSON | None = None
    _model: str | None = None

    def add_chunk(self, chunk: JSON) -> Iterator[StreamEvent]:
        """Take in one chunk; yield the deltas it carries for choice 0."""
        self.saw_chunk = True
        if chunk.get("usage"):
            self._usage = as_dict(chunk["usage"])
        if isinstance(model := chunk.get("model"), str) and model:
            self._model = model
        for choice in map(as_dict, as_list(chunk.get("choices"))):
            if choice.get("index", 0) in (0, None):
                yield from self._add_choice(choice)

    def _add_choice(self, choice: JSON) -> Iterator[StreamEvent]:
        if isinstance(reason := choice.get("finish_reason"), str) and reason:
            self._finish = reason
        delta = as_dict(choice.get("delta"))
        text, thinking = _content_parts(delta.get("content"))
        reasoning = _first_text(delta.get("reasoning_content"), delta.get("reasoning")) or thinking
        if reasoning:
            self._reasoning.append(reasoning)
            yield ReasoningDelta(text=reasoning)
        if text:
            self._content.append(text)
            yield TextDelta(text=text)
        if isinstance(refusal := delta.get("refusal"), str):
            self._refusal.append(refusal)
        if isinstance(extra := delta.get("extra_content"), dict):
            self._message_extra["extra_content"] = extra
        calls = as_list(delta.get("tool_calls"))
        if not calls and isinstance(delta.get("function_call"), dict):
            calls = [{"index": 0, "function": delta["function_call"]}]
        for position, call in enumerate(calls):
            if event := self._add_call(as_dict(call), position):
                yield event

    def _add_call(self, call: JSON, position: int) -> ToolCallDelta | None:
        index = call.get("index")
        index = index if isinstance(index, int) else position
        parts = self._calls.setdefault(index, _CallParts())
        function = as_dict(call.get("function"))
        call_id, name = as_text(call.get("id")), as_text(function.get("name"))
        arguments = _arguments_text(function.get("arguments"))
        parts.id = call_id or parts.id
        parts.name = name or parts.name
        parts.arguments.append(arguments)
        if isinstance(extra := call.get("extra_content"), dict):
            parts.extra["extra_content"] = extra
        if not (call_id or name or arguments):
            return None
        return ToolCallDelta(
            index=index, id=call_id or None, name=name or None, arguments=arguments
        )

    def finish(self, *, request_id: str | None) -> ModelResponse:
        """The whole response, from everything taken in so far."""
        calls = [_finish_call(index, self._calls[index]) for index in sorted(self._calls)]
        refusal = "".join(self._refusal) or None
        message = Message(
            role="assistant",
            content="".join(self._content) or None,
            tool_calls=tuple(call for call, _ in calls),
            reasoning="".join(self._reasoning) or None,
            provider_data=self._provider_data({c.id: e for c, e in calls if e}),
        )
        return ModelResponse(
            message=message,
            usage=_usage(self._usage),
            model=self._model,
            refusal=refusal,
            finish_reason=map_finish_reason(
                self._finish, has_tool_calls=bool(calls), refusal=refusal
            ),
            request_id=request_id,
            raw_finish_reason=self._finish,
        )

    def _provider_data(self, call_extras: dict[str, JSON]) -> dict[str, Any] | None:
        replay: JSON = {}
        if self._message_extra:
            replay["message"] = dict(self._message_extra)
        if call_extras:
            replay["tool_calls"] = call_extras
        return {_PROVIDER_KEY: replay} if replay else None


def map_finish_reason(
    raw: str | None, *, has_tool_calls: bool, refusal: str | None = None
) -> FinishReason:
    """Harness's finish reason for the provider's `raw` one.

    A refusal wins over everything. Tool calls that came with `stop` (or no reason, or an
    unknown one) are reported as `tool_calls`, since several local servers say `stop`.
    """
    if refusal:
        return "refusal"
    reason = _FINISH_REASONS.get(raw or "", "other")
    if has_tool_calls and reason in ("stop", "other"):
        return "tool_calls"
    return reason


def _finish_call(index: int, parts: _CallParts) -> tuple[ToolCall, JSON]:
    call_id = parts.id or f"call_{index}_{secrets.token_hex(4)}"
    call = ToolCall(id=call_id, name=parts.name, arguments="".join(parts.arguments))
    return call, parts.extra


def _usage(raw: JSON | None) -> Usage:
    usage = raw or {}
    prompt_details = as_dict(usage.get("prompt_tokens_details"))
    completion_details = as_dict(usage.get("completion_tokens_details"))
    return Usage(
        input_tokens=as_int(usage.get("prompt_tokens")),
        output_tokens=as_int(usage.get("completion_tokens")),
        cached_tokens=as_int(prompt_details.get("cached_tokens")),
        reasoning_tokens=as_int(completion_details.get("reasoning_tokens")),
        requests=1,
    )


def _content_parts(content: object) -> tuple[str, str]:
    """Answer text and thinking text of a content value (a string or a list of parts)."""
    if isinstance(content, str):
        return content, ""
    text: list[str] = []
    thinking: list[str] = []
    for part in map(as_dict, as_list(content)):
        if part.get("type") == "thinking":
            thinking.append(_content_parts(part.get("thinking"))[0])
        elif isinstance(part.get("text"), str):
            text.append(part["text"])
    return "".join(text), "".join(thinking)


def _arguments_text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def _first_text(*values: object) -> str:
    return next((v for v in values if isinstance(v, str) and v), "")
