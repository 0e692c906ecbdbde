"""`TextCallRescueModel`: native tool calling, with calls that came back as text rescued.

A local model served without its chat template (Ollama, llama.cpp without `--jinja`, an
older vLLM) gets the tools natively but writes its call as text, e.g.
`<tool_call>{"name": "bash", ...}</tool_call>` in the answer, with no native call. In
`tool_calls = "auto"` such a reply is read like text mode reads one, in whatever format
it is written (the model family decides when the text alone cannot), and its calls run.

A reply is read only when the turn offers tools and the server returned no native call.
Prose that merely shows call syntax must stay an answer, so the rules are stricter than
text mode's:

- Markdown code (fenced blocks, `inline` spans) holds examples, never calls.
- A reply without a call marker (a bare JSON object or call list, as Llama 3 and the
  pythonic formats write) calls only when every call it holds names an offered tool.
- Markup that cannot be read is told to the model (showing the right form, as in text
  mode) when it names a tool or the answer opens with it; otherwise the reply is prose.
- A reply with native calls keeps them; markup in its text stays text.

In a turn with tools the text is read as plain text (reasoning tags split off, the answer
trimmed) unless it holds calls by these rules, or opens with a marker (gpt-oss's channels,
Command R's response tags): then in its format, even without calls.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from typing import Final

from harness.core.messages import ToolDefinition
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
from harness.gateway.textcalls._scan import find_first
from harness.gateway.textcalls._types import TextParse
from harness.gateway.textcalls.auto import MARKERS
from harness.gateway.textcalls.model import with_text_calls
from harness.gateway.textcalls.parse import parse_text, resolve_format
from harness.gateway.textcalls.reasoning import THINK_TAGS, split_reasoning
from harness.gateway.textcalls.registry import get_format
from harness.gateway.textcalls.stream import TextCallStream
from harness.gateway.wrappers._shared import closing

__all__ = ["TextCallRescueModel", "mask_code"]

_FENCE: Final = re.compile(r"^[ \t]*(`{3,}|~{3,}).*?(?:\n[ \t]*\1[^\n]*|\Z)", re.M | re.S)
_INLINE: Final = re.compile(r"(?<!`)(`+)(?!`)[^\n]*?(?<!`)\1(?!`)")


def mask_code(text: str) -> str:
    """`text` with markdown code blocks and spans blanked out, keeping its length."""
    return _INLINE.sub(_blank, _FENCE.sub(_blank, text))


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group())


class TextCallRescueModel(WrapperModel):
    """Wraps a natively tool-calling model so that calls written as text run too.

    Args:
        inner: The model that gets the tools natively.
        family: The model's name, which picks the format of replies without a marker
            (default: the inner model's name).
        thinking_forced_open: The chat template opens `<think>` in the prompt, so replies
            start with reasoning.
    """

    def __init__(
        self, inner: Model, *, family: str | None = None, thinking_forced_open: bool = False
    ) -> None:
        super().__init__(inner)
        self.format = resolve_format("auto", model_family=family or inner.name)
        self.thinking_forced_open = thinking_forced_open

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send the request as it is, and rescue the calls written in the reply."""
        return self.rescue(await self.inner.request(request), request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream the reply; with tools, text that may be call markup is held back."""
        if not request.tools:
            async with closing(self.inner.stream(request)) as events:
                async for event in events:
                    yield event
            return
        reader = TextCallStream(
            self.format, tools=request.tools, thinking_forced_open=self.thinking_forced_open
        )
        shown = _Shown(reader)
        async with closing(self.inner.stream(request)) as events:
            async for event in events:
                if isinstance(event, ResponseDone):
                    response = self.rescue(event.response, request)
                    for delta in shown.rest(response):
                        yield delta
                    yield ResponseDone(response=response)
                else:
                    for shown_event in shown.take(event):
                        yield shown_event

    def rescue(self, response: ModelResponse, request: ModelRequest) -> ModelResponse:
        """`response` with the calls its text holds, when the server returned none."""
        if not request.tools:
            return response
        text = response.message.content or ""
        parsed = self._read(text, request.tools, native=bool(response.message.tool_calls))
        return with_text_calls(response, request, parsed, get_format(parsed.format))

    def _read(self, text: str, tools: Sequence[ToolDefinition], *, native: bool) -> TextParse:
        """The text read in its format, or as plain text when its markup must not count."""
        forced_open = self.thinking_forced_open
        whole = parse_text(text, self.format, tools=tools, thinking_forced_open=forced_open)
        masked = mask_code(text)
        if not whole.calls and not whole.malformed:
            if _opens_with_marker(masked):  # a reply in the format's own structure
                return whole
        elif not native:
            probe = parse_text(masked, self.format, tools=tools, thinking_forced_open=forced_open)
            if _attempted(probe, masked, tools):
                return whole
        return parse_text(text, "plain", thinking_forced_open=forced_open)


def _attempted(probe: TextParse, masked: str, tools: Sequence[ToolDefinition]) -> bool:
    """Whether the text outside code holds a call, or markup that was meant as one."""
    offered = {tool.name for tool in tools}
    if find_first(masked, MARKERS) is None:
        if probe.calls:
            return all(call.name in offered for call in probe.calls)
        return bool(probe.malformed) and all(m.name in offered for m in probe.malformed)
    if probe.calls or any(m.name for m in probe.malformed):
        return True
    return bool(probe.malformed) and _opens_with_marker(masked)


def _opens_with_marker(text: str) -> bool:
    _, answer = split_reasoning(text, THINK_TAGS, forced_open=False, markers=MARKERS)
    return answer.lstrip().startswith(MARKERS)


class _Shown:
    """What a stream has shown of the answer and reasoning, and what it still owes."""

    def __init__(self, reader: TextCallStream) -> None:
        self.reader = reader
        self.text = ""
        self.reasoning = ""
        self.native_reasoning = False

    def take(self, event: StreamEvent) -> list[StreamEvent]:
        """The events to pass on for one event of the inner stream."""
        if isinstance(event, ReasoningDelta):
            self.native_reasoning = True
            self.reasoning += event.text
            return [event]
        if not isinstance(event, TextDelta):
            return [event]  # native call fragments pass as they come
        shown: list[StreamEvent] = []
        for delta in self.reader.feed(event.text):
            if isinstance(delta, ReasoningDelta) and self.native_reasoning:
                delta = ReasoningDelta(text=f"\n\n{delta.text}")
                self.native_reasoning = False
            if isinstance(delta, TextDelta):
                self.text += delta.text
            else:
                self.reasoning += delta.text
            shown.append(delta)
        return shown

    def rest(self, response: ModelResponse) -> list[StreamEvent]:
        """The deltas that make what was shown add up to the final message."""
        rest: list[StreamEvent] = []
        reasoning = response.message.reasoning or ""
        if len(reasoning) > len(self.reasoning) and reasoning.startswith(self.reasoning):
            rest.append(ReasoningDelta(text=reasoning[len(self.reasoning) :]))
        content = response.message.content or ""
        if len(content) > len(self.text) and content.startswith(self.text):
            rest.append(TextDelta(text=content[len(self.text) :]))
        return rest
