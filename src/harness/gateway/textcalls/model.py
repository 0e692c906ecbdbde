"""`TextToolCallModel`: tool calling for models whose server does not parse tool calls."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence

from harness.core.ids import new_id
from harness.core.messages import Message, ToolCall
from harness.core.unicode import clean_message
from harness.gateway.model import (
    Model,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    WrapperModel,
)
from harness.gateway.textcalls._types import TextParse
from harness.gateway.textcalls.base import TextFormat
from harness.gateway.textcalls.instructions import (
    render_history,
    render_instructions,
    with_instructions,
)
from harness.gateway.textcalls.malformed import malformed_tool_call
from harness.gateway.textcalls.parse import parse_text, resolve_format
from harness.gateway.textcalls.stream import TextCallStream
from harness.gateway.wrappers._shared import closing

__all__ = ["TextToolCallModel", "with_text_calls"]


class TextToolCallModel(WrapperModel):
    """Wraps a model so that it calls tools by writing them as text.

    The tools are described in the system prompt (in the format's own syntax) and the
    request goes out without native tools; earlier calls and results in the history are
    written as text too. The reply's text is parsed into `Message.tool_calls`, with the
    reasoning split off; calls written inside reasoning never run. A call that cannot be
    read becomes a `malformed_tool_call` call, which the toolset answers with an
    explanation, so the model can write it again.

    Args:
        inner: The model that only reads and writes text.
        format: The tool-call format (`hermes`, `qwen3_coder`, `harmony`, ...) or `auto`,
            which reads any format and writes the model family's.
        family: The model's name, used by `auto` (default: the inner model's name).
        thinking_forced_open: The chat template opens `<think>` in the prompt, so replies
            start with reasoning.

    Raises:
        ConfigError: `format` is not a known format.
    """

    def __init__(
        self,
        inner: Model,
        *,
        format: str = "auto",
        family: str | None = None,
        thinking_forced_open: bool = False,
    ) -> None:
        super().__init__(inner)
        self.family = family if family is not None else inner.name
        self.format = resolve_format(format, model_family=self.family)
        self.thinking_forced_open = thinking_forced_open

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """The request the inner model gets: no native tools, calls and results as text."""
        messages = render_history(request.messages, self.format)
        if request.tools:
            parallel = request.settings.parallel_tool_calls is not False
            instructions = render_instructions(request.tools, self.format, parallel=parallel)
            messages = with_instructions(messages, instructions)
        settings = dataclasses.replace(request.settings, parallel_tool_calls=None)
        return dataclasses.replace(request, messages=tuple(messages), tools=(), settings=settings)

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send the request as text and read the calls out of the reply."""
        response = await self.inner.request(self.prepare(request))
        parsed = parse_text(
            response.message.content or "",
            self.format,
            tools=request.tools,
            thinking_forced_open=self.thinking_forced_open,
        )
        return with_text_calls(response, request, parsed, self.format)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream the reply: answer and reasoning text as soon as it cannot be call markup."""
        reader = TextCallStream(
            self.format, tools=request.tools, thinking_forced_open=self.thinking_forced_open
        )
        native_reasoning = False
        parsed: TextParse | None = None
        async with closing(self.inner.stream(self.prepare(request))) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    deltas = reader.feed(event.text)
                elif isinstance(event, ReasoningDelta):
                    yield event
                    native_reasoning = True
                    continue
                elif isinstance(event, ResponseDone):
                    deltas, parsed = reader.finish(event.response.message.content or "")
                else:
                    continue  # native call fragments: the final message carries them
                for delta in deltas:
                    if isinstance(delta, ReasoningDelta) and native_reasoning:
                        delta = ReasoningDelta(text=f"\n\n{delta.text}")
                        native_reasoning = False
                    yield delta
                if isinstance(event, ResponseDone) and parsed is not None:
                    yield ResponseDone(
                        response=with_text_calls(event.response, request, parsed, self.format)
                    )


def with_text_calls(
    response: ModelResponse, request: ModelRequest, parsed: TextParse, format: TextFormat
) -> ModelResponse:
    """`response` with the answer, reasoning and calls that were read from its text.

    Calls come only when tools were offered; each malformed call becomes a
    `malformed_tool_call` call, explained in `format`'s own syntax. The response's
    `tool_calls_from_text` names the format when calls were read.
    """
    original = response.message
    calls = list(original.tool_calls)
    from_text: list[ToolCall] = []
    if request.tools:
        from_text += parsed.calls
        from_text += (malformed_tool_call(m, format, request.tools) for m in parsed.malformed)
    calls += from_text
    reasoning = "\n\n".join(r for r in (original.reasoning, parsed.reasoning) if r) or None
    message = dataclasses.replace(
        original,
        content=parsed.content,
        tool_calls=_unique_ids(calls, request.messages),
        reasoning=reasoning,
    )
    message = clean_message(message)  # a "\ud800" escape in the text decodes to a surrogate
    finish = response.finish_reason
    if calls and finish in ("stop", "other"):
        finish = "tool_calls"
    return dataclasses.replace(
        response,
        message=message,
        finish_reason=finish,
        tool_calls_from_text=parsed.format if from_text else None,
    )


def _unique_ids(calls: Sequence[ToolCall], history: Sequence[Message]) -> tuple[ToolCall, ...]:
    """The calls, with a fresh id where the model's own id is already taken."""
    taken = {c.id for m in history for c in m.tool_calls}
    taken |= {m.tool_call_id for m in history if m.tool_call_id}
    unique: list[ToolCall] = []
    for call in calls:
        if call.id in taken:
            call = dataclasses.replace(call, id=new_id("call"))
        taken.add(call.id)
        unique.append(call)
    return tuple(unique)
