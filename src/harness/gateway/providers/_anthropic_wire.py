"""The Anthropic Messages wire format, to and from harness messages.

Pure functions over plain JSON values, with no SDK import. A whole message is read as the
stream of events it would have been (`message_start`, one start and stop per block,
`message_delta`), so a response gives the same `Message` whether it arrived in one piece or
in a hundred.

What harness has no field for is kept in `Message.provider_data["anthropic"]` and sent back
exactly: thinking blocks with their signatures, redacted thinking, server-side tool blocks,
the split of the text into blocks and any extra fields of a block. There `content` lists the
assistant's blocks as received, except that text blocks lack their `text` (it is in
`Message.content`; `text_chars` gives each block's length) and `tool_use` blocks lack their
`input` (it is in `Message.tool_calls`). A `tool` message whose `provider_data` has
`{"anthropic": {"is_error": true}}` is sent as a failed `tool_result`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from harness.core.bounds import json_bound_problem
from harness.core.messages import Message, ToolCall, ToolDefinition
from harness.core.usage import Usage
from harness.gateway.model import (
    FinishReason,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from harness.gateway.providers._values import JSON, as_dict, as_int, as_list, as_text, json_excerpt

__all__ = [
    "PROVIDER_KEY",
    "MessageAssembler",
    "map_stop_reason",
    "parse_message",
    "request_params",
]


PROVIDER_KEY = "anthropic"
"""Key of `Message.provider_data` holding what must go back to the API unchanged."""

_STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "refusal",
}


# --- request ------------------------------------------------------------------------------


def request_params(request: ModelRequest, *, max_tokens: int) -> JSON:
    """The JSON body of a Messages request, without `model` and `stream`.

    System messages become `system`; consecutive tool results become one user turn of
    `tool_result` blocks; assistant messages go back with the blocks they arrived with.
    `max_tokens` applies when the request's settings give no `max_output_tokens`.
    """
    params: JSON = {"messages": _turns(request.messages)}
    system = [m.content for m in request.messages if m.role == "system" and m.content]
    if system:
        params["system"] = "\n\n".join(system)
    if request.tools:
        params["tools"] = [_tool_to_wire(t) for t in request.tools]
    params.update(_settings_to_wire(request.settings, max_tokens, has_tools=bool(request.tools)))
    return params


def _turns(messages: Iterable[Message]) -> list[JSON]:
    """Alternating user and assistant turns; messages of the same role share one turn."""
    turns: list[JSON] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:  # the API rejects empty turns; an empty reply carries nothing anyway
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _blocks(message: Message) -> list[JSON]:
    if message.role == "tool":
        return [_tool_result(message)]
    if message.role == "assistant":
        return assistant_blocks(message)
    return [{"type": "text", "text": message.content}] if message.content else []


def _tool_result(message: Message) -> JSON:
    replay = as_dict((message.provider_data or {}).get(PROVIDER_KEY))
    return {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id or "",
        "content": message.content or "",
        "is_error": replay.get("is_error") is True,
    }


def assistant_blocks(message: Message) -> list[JSON]:
    """The content blocks that send an assistant message back to the API.

    With the layout kept in `provider_data` the blocks are the ones received, in order.
    When the text or the tool calls were changed since, the kept blocks that harness has no
    field for come first, then the text, then the calls.
    """
    replay = as_dict((message.provider_data or {}).get(PROVIDER_KEY))
    layout = [as_dict(b) for b in as_list(replay.get("content"))]
    chars = [c for c in as_list(replay.get("text_chars")) if isinstance(c, int)]
    blocks = _fill(layout, chars, message)
    if blocks is None:
        kept = [dict(b) for b in layout if b.get("type") not in ("text", "tool_use")]
        blocks = kept + _plain_blocks(message)
    return [b for b in blocks if _sendable(b)]


def _fill(layout: Sequence[JSON], chars: Sequence[int], message: Message) -> list[JSON] | None:
    """`layout` with the text and call arguments of `message`; `None` if they do not fit."""
    texts = _split(message.content or "", chars)
    calls = {call.id: call for call in message.tool_calls}
    ids = [b.get("id") for b in layout if b.get("type") == "tool_use"]
    if not layout or texts is None or len(texts) != _count(layout, "text"):
        return None
    if sorted(map(str, ids)) != sorted(c.id for c in message.tool_calls) or len(calls) != len(ids):
        return None
    blocks: list[JSON] = []
    pieces = iter(texts)
    for block in layout:
        if block.get("type") == "text":
            blocks.append({**block, "text": next(pieces)})
        elif block.get("type") == "tool_use":
            blocks.append(_tool_use(calls[str(block.get("id"))], block))
        else:
            blocks.append(dict(block))
    return blocks


def _plain_blocks(message: Message) -> list[JSON]:
    """One text block and one `tool_use` block per call: a message without a kept layout."""
    text: list[JSON] = [{"type": "text", "text": message.content}] if message.content else []
    return text + [_tool_use(call) for call in message.tool_calls]


def _tool_use(call: ToolCall, kept: JSON | None = None) -> JSON:
    block: JSON = {"type": "tool_use", "id": call.id, "name": call.name}
    return {**(kept or {}), **block, "input": tool_input(call.arguments)}


def _plain_layout(message: Message) -> list[JSON]:
    """The layout of a message that arrived as at most one text block and plain calls."""
    text: list[JSON] = [{"type": "text"}] if message.content else []
    return text + [{"type": "tool_use", "id": c.id, "name": c.name} for c in message.tool_calls]


def _plain_chars(message: Message) -> list[int]:
    return [len(message.content)] if message.content else []


def _split(text: str, chars: Sequence[int]) -> list[str] | None:
    if sum(chars) != len(text) or any(n < 0 for n in chars):
        return None
    pieces: list[str] = []
    start = 0
    for n in chars:
        pieces.append(text[start : start + n])
        start += n
    return pieces


def _sendable(block: JSON) -> bool:
    """Whether the API accepts the block back: no empty text, no unsigned thinking."""
    if block.get("type") == "text":
        return bool(block.get("text"))
    if block.get("type") == "thinking":
        return bool(block.get("signature"))
    return True


def tool_input(arguments: str) -> JSON:
    """The `input` object of a `tool_use` block, from the arguments a model sent.

    Empty arguments are `{}`. Arguments that are not a JSON object (a call another provider
    produced with broken JSON) are kept as text under `raw_arguments`, so nothing is lost.
    """
    if not arguments.strip():
        return {}
    if json_bound_problem(arguments):  # nested too deep to parse or send: kept as text
        return {"raw_arguments": arguments}
    try:
        parsed: object = json.loads(arguments)
    except ValueError:
        return {"raw_arguments": arguments}
    return cast(JSON, parsed) if isinstance(parsed, dict) else {"raw_arguments": arguments}


def _tool_to_wire(tool: ToolDefinition) -> JSON:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def _settings_to_wire(settings: ModelSettings, max_tokens: int, *, has_tools: bool) -> JSON:
    """Sampling settings; `seed` is left out, as the Messages API has none."""
    limit = settings.max_output_tokens
    wire: JSON = {"max_tokens": max_tokens if limit is None else limit}
    named = {"temperature": settings.temperature, "top_p": settings.top_p}
    wire.update({key: value for key, value in named.items() if value is not None})
    if settings.stop:
        wire["stop_sequences"] = list(settings.stop)
    if settings.parallel_tool_calls is False and has_tools:
        wire["tool_choice"] = {"type": "auto", "disable_parallel_tool_use": True}
    if settings.response_format is not None:  # native structured output
        schema = dict(settings.response_format.schema)
        wire["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    wire.update(settings.extra_body or {})
    return wire


# --- response -----------------------------------------------------------------------------


def parse_message(body: JSON, *, request_id: str | None) -> ModelResponse:
    """Normalise a non-streaming Messages response body.

    Raises:
        ValueError: The body is not a message.
    """
    if not isinstance(body.get("content"), list):
        raise ValueError(f"the answer has no content list: {json_excerpt(body)}")
    assembler = MessageAssembler()
    for event in _as_events(body):
        for _ in assembler.add_event(event):
            pass
    return assembler.finish(request_id=request_id)


def _as_events(body: JSON) -> Iterator[JSON]:
    """The stream events a whole message would have been sent as."""
    head = {k: v for k, v in body.items() if k not in ("content", "stop_reason", "usage")}
    yield {"type": "message_start", "message": {**head, "content": []}}
    for index, block in enumerate(as_list(body.get("content"))):
        yield {"type": "content_block_start", "index": index, "content_block": block}
        yield {"type": "content_block_stop", "index": index}
    delta = {k: body.get(k) for k in ("stop_reason", "stop_sequence", "stop_details")}
    yield {"type": "message_delta", "delta": delta, "usage": as_dict(body.get("usage"))}


@dataclass
class _Block:
    """One content block as it builds up."""

    data: JSON
    """The block from `content_block_start`, without the pieces that arrive as deltas."""
    parts: list[str] = field(default_factory=list[str])
    """Text, thinking or `partial_json` pieces, in order."""
    saw_json: bool = False
    """Whether an `input_json_delta` arrived (then `parts` replaces the start's `input`)."""
    call_index: int | None = None
    """For a client `tool_use` block: its position among the calls."""
    closed: bool = False
    """Whether `content_block_stop` arrived."""

    @property
    def kind(self) -> str:
        return str(self.data.get("type", ""))


@dataclass
class MessageAssembler:
    """Accumulates Messages stream events into one `ModelResponse`."""

    saw_start: bool = False
    """Whether `message_start` arrived."""
    saw_stop_reason: bool = False
    """Whether a `message_delta` with a stop reason arrived: the answer is complete."""
    _blocks: dict[int, _Block] = field(default_factory=dict[int, _Block])
    _calls: int = 0
    _usage: JSON = field(default_factory=dict[str, Any])
    _model: str | None = None
    _stop_reason: str | None = None
    _stop_details: JSON = field(default_factory=dict[str, Any])

    def add_event(self, event: JSON) -> Iterator[StreamEvent]:
        """Take in one stream event; yield the deltas it carries."""
        kind = event.get("type")
        if kind == "message_start":
            self._start(as_dict(event.get("message")))
        elif kind == "content_block_start":
            yield from self._start_block(event)
        elif kind == "content_block_delta":
            yield from self._delta(event)
        elif kind == "content_block_stop":
            if block := self._blocks.get(_index(event)):
                block.closed = True
        elif kind == "message_delta":
            self._message_delta(event)

    def _start(self, message: JSON) -> None:
        self.saw_start = True
        if isinstance(model := message.get("model"), str) and model:
            self._model = model
        self._merge_usage(as_dict(message.get("usage")))

    def _start_block(self, event: JSON) -> Iterator[StreamEvent]:
        data = dict(as_dict(event.get("content_block")))
        block = _Block(data=data)
        self._blocks[_index(event)] = block
        if block.kind in ("text", "thinking"):
            yield from self._add_text(block, as_text(data.pop(block.kind, None)))
        if block.kind == "tool_use":
            block.call_index, self._calls = self._calls, self._calls + 1
            call_id, name = as_text(data.get("id")) or None, as_text(data.get("name")) or None
            yield ToolCallDelta(index=block.call_index, id=call_id, name=name)

    def _delta(self, event: JSON) -> Iterator[StreamEvent]:
        block = self._blocks.get(_index(event))
        delta = as_dict(event.get("delta"))
        kind = delta.get("type")
        if block is None:
            return
        if kind == "text_delta":
            yield from self._add_text(block, as_text(delta.get("text")))
        elif kind == "thinking_delta":
            yield from self._add_text(block, as_text(delta.get("thinking")))
        elif kind == "signature_delta":
            block.data["signature"] = as_text(block.data.get("signature")) + as_text(
                delta.get("signature")
            )
        elif kind == "input_json_delta":
            piece = as_text(delta.get("partial_json"))
            block.parts.append(piece)
            block.saw_json = True
            if block.call_index is not None and piece:
                yield ToolCallDelta(index=block.call_index, arguments=piece)
        elif kind == "citations_delta":
            citations = as_list(block.data.get("citations"))
            block.data["citations"] = [*citations, delta.get("citation")]

    def _add_text(self, block: _Block, piece: str) -> Iterator[StreamEvent]:
        if not piece:
            return
        block.parts.append(piece)
        yield TextDelta(text=piece) if block.kind == "text" else ReasoningDelta(text=piece)

    def _message_delta(self, event: JSON) -> None:
        delta = as_dict(event.get("delta"))
        if isinstance(reason := delta.get("stop_reason"), str) and reason:
            self._stop_reason = reason
            self.saw_stop_reason = True
        self._stop_details = as_dict(delta.get("stop_details")) or self._stop_details
        self._merge_usage(as_dict(event.get("usage")))

    def _merge_usage(self, usage: JSON) -> None:
        """Streams report cumulative counts: the last value of each one wins."""
        self._usage.update({key: value for key, value in usage.items() if value is not None})

    def finish(self, *, request_id: str | None) -> ModelResponse:
        """The whole response, from everything taken in so far."""
        blocks = [self._blocks[index] for index in sorted(self._blocks)]
        calls = [_call(b) for b in blocks if b.kind == "tool_use" and b.closed]
        message = Message(
            role="assistant",
            content=_joined(blocks, "text"),
            tool_calls=tuple(calls),
            reasoning=_joined(blocks, "thinking"),
        )
        layout, chars = _layout(blocks)
        if layout != _plain_layout(message) or chars != _plain_chars(message):
            replay = {"content": layout, "text_chars": chars}
            message = dataclasses.replace(message, provider_data={PROVIDER_KEY: replay})
        return ModelResponse(
            message=message,
            finish_reason=map_stop_reason(self._stop_reason, has_tool_calls=bool(calls)),
            usage=_usage(self._usage),
            model=self._model,
            refusal=self._refusal(message) if self._stop_reason == "refusal" else None,
            request_id=request_id,
            raw_finish_reason=self._stop_reason,
        )

    def _refusal(self, message: Message) -> str:
        explanation = self._stop_details.get("explanation")
        if isinstance(explanation, str) and explanation:
            return explanation
        category = self._stop_details.get("category")
        said = f" (category: {category})" if isinstance(category, str) else ""
        return message.content or f"the model declined to answer{said}"


def map_stop_reason(raw: str | None, *, has_tool_calls: bool) -> FinishReason:
    """Harness's finish reason for Anthropic's `stop_reason`.

    `end_turn` and `stop_sequence` are `stop`; `max_tokens` and
    `model_context_window_exceeded` are `length`; `pause_turn` and unknown reasons are
    `other`. Tool calls that came with `end_turn` are reported as `tool_calls`.
    """
    reason = _STOP_REASONS.get(raw or "", "other")
    if has_tool_calls and reason == "stop":
        return "tool_calls"
    return reason


def _call(block: _Block) -> ToolCall:
    """A client tool call: streamed arguments exactly as sent, a whole `input` as compact JSON."""
    arguments = "".join(block.parts)
    if not block.saw_json or not arguments:
        given = as_dict(block.data.get("input"))
        arguments = json.dumps(given, ensure_ascii=False, separators=(",", ":")) if given else "{}"
    return ToolCall(
        id=as_text(block.data.get("id")), name=as_text(block.data.get("name")), arguments=arguments
    )


def _layout(blocks: Sequence[_Block]) -> tuple[list[JSON], list[int]]:
    """What goes into `provider_data`: every block, minus what the message itself holds.

    A client `tool_use` block cut short (no `content_block_stop`) is left out with its call.
    """
    layout: list[JSON] = []
    chars: list[int] = []
    for block in blocks:
        if block.kind == "text":
            layout.append(_without(block.data, "text"))
            chars.append(len("".join(block.parts)))
        elif block.kind == "tool_use":
            if block.closed:
                layout.append(_without(block.data, "input"))
        else:
            layout.append(_finished(block))
    return layout, chars


def _finished(block: _Block) -> JSON:
    """A block harness does not read, as it must go back: pieces joined, input parsed."""
    data = dict(block.data)
    if block.kind == "thinking":
        data["thinking"] = "".join(block.parts)
    elif block.saw_json:
        try:
            data["input"] = json.loads("".join(block.parts) or "{}")
        except (ValueError, RecursionError):
            pass  # a server block cut short keeps the input it started with
    return data


def _without(data: JSON, key: str) -> JSON:
    """`data` less `key` and the fields the API sent as null (it takes them back as absent)."""
    return {k: v for k, v in data.items() if k != key and v is not None}


def _joined(blocks: Sequence[_Block], kind: str) -> str | None:
    return "".join("".join(b.parts) for b in blocks if b.kind == kind) or None


def _usage(raw: JSON) -> Usage:
    """Harness usage: input counts the uncached, cache-read and cache-written tokens."""
    cache_read = as_int(raw.get("cache_read_input_tokens"))
    cache_write = as_int(raw.get("cache_creation_input_tokens"))
    details = as_dict(raw.get("output_tokens_details"))
    return Usage(
        input_tokens=as_int(raw.get("input_tokens")) + cache_read + cache_write,
        output_tokens=as_int(raw.get("output_tokens")),
        cached_tokens=cache_read,
        reasoning_tokens=as_int(details.get("thinking_tokens")),
        requests=1,
    )


def _count(layout: Sequence[JSON], kind: str) -> int:
    return sum(1 for block in layout if block.get("type") == kind)


def _index(event: JSON) -> int:
    return as_int(event.get("index"))
