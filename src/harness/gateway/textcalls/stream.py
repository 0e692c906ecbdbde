"""`TextCallStream`: reads a reply while it arrives.

Every chunk may settle more answer or reasoning text, which is handed out at once; text
that could still turn out to be call markup (a possible marker prefix, a call, an undecided
format) is held back. At the end the whole text is parsed, and the rest of the answer comes
out, so the deltas always add up to the final message, however the text was cut.

The formats settle the whole text for every chunk, but inside the stream's `ScanMemo` their
marker searches go on from where they stopped on the text before (and harmony's split into
messages too), so a long reply costs time in proportion to its length.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.core.messages import ToolDefinition
from harness.gateway.model import ReasoningDelta, TextDelta
from harness.gateway.textcalls._scan import ScanMemo
from harness.gateway.textcalls._types import ParseContext, TextParse
from harness.gateway.textcalls.base import TextFormat
from harness.gateway.textcalls.parse import parse_text, resolve_format

__all__ = ["TextCallStream"]

Delta = TextDelta | ReasoningDelta


class TextCallStream:
    """Accumulates a reply chunk by chunk.

    Args:
        format: A format name, `auto`, or a format object.
        tools: The offered tools.
        model_family: The model's name, for `auto`.
        thinking_forced_open: The prompt ends inside `<think>`.
    """

    def __init__(
        self,
        format: str | TextFormat = "auto",
        *,
        tools: Sequence[ToolDefinition] = (),
        model_family: str | None = None,
        thinking_forced_open: bool = False,
    ) -> None:
        if isinstance(format, str):
            format = resolve_format(format, model_family=model_family)
        self._format = format
        self._tools = tuple(tools)
        self._context = ParseContext(tools=self._tools, thinking_forced_open=thinking_forced_open)
        self._text = ""
        self._sent_content = ""
        self._sent_reasoning = ""
        self._memo = ScanMemo()

    @property
    def text(self) -> str:
        """Everything received so far."""
        return self._text

    @property
    def scanned(self) -> int:
        """Characters searched for markers so far: grows with the reply, not its square."""
        return self._memo.scanned

    def feed(self, chunk: str) -> list[Delta]:
        """Take the next chunk; return the answer and reasoning text it settled."""
        self._text += chunk
        with self._memo:
            reasoning, content = self._format.settled(self._text, self._context)
        return self._advance(reasoning.strip(), content.strip())

    def snapshot(self) -> TextParse:
        """The parse of the text so far, with the call still being written as `partial`."""
        return self._parse(partial=True)

    def finish(self, text: str | None = None) -> tuple[list[Delta], TextParse]:
        """End the reply: the remaining deltas and the parse of the whole text.

        Args:
            text: The whole reply, when the provider reports it (it wins over the chunks).
        """
        if text is not None:
            self._text = text
        parsed = self._parse(partial=False)
        return self._advance(parsed.reasoning or "", parsed.content or ""), parsed

    def _parse(self, *, partial: bool) -> TextParse:
        return parse_text(
            self._text,
            self._format,
            tools=self._tools,
            thinking_forced_open=self._context.thinking_forced_open,
            partial=partial,
        )

    def _advance(self, reasoning: str, content: str) -> list[Delta]:
        deltas: list[Delta] = []
        if len(reasoning) > len(self._sent_reasoning) and reasoning.startswith(
            self._sent_reasoning
        ):
            deltas.append(ReasoningDelta(text=reasoning[len(self._sent_reasoning) :]))
            self._sent_reasoning = reasoning
        if len(content) > len(self._sent_content) and content.startswith(self._sent_content):
            deltas.append(TextDelta(text=content[len(self._sent_content) :]))
            self._sent_content = content
        return deltas
