"""`TextCallStream`: reads a reply while it arrives.

Every chunk may settle more answer or reasoning text, which is handed out at once; text
that could still turn out to be call markup (a possible marker prefix, a call, an undecided
format) is held back. At the end the whole text is parsed, and the rest of the answer comes
out, so the deltas always add up to the final message, however the text was cut.

A chunk costs time in proportion to its length, not to the text so far. When the format
settles a text, it also says how a longer one settles (a `Quiet`): which part the new text
goes on, until which markers appear. Until one of them does, a chunk is read on its own,
with the few characters before it that may begin a marker; when one appears, the format
reads the whole text again. Such readings happen a few times per call, not per chunk, and
inside the stream's `ScanMemo` their marker searches go on from where they stopped.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.core.messages import ToolDefinition
from harness.gateway.model import ReasoningDelta, TextDelta
from harness.gateway.textcalls._scan import ScanMemo, go_on
from harness.gateway.textcalls._types import ParseContext, Quiet, TextParse
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
        self._text: str = ""
        self._sent_content: str = ""
        self._sent_reasoning: str = ""
        self._memo = ScanMemo()
        self._quiet: Quiet | None = None
        self._blank: str = ""
        """Whitespace at the end of the growing part, not handed out (it may end the part)."""
        self._read_chunk = 0
        self.rereads = 0
        """How often the format read the whole text so far: a few times per call."""

    @property
    def text(self) -> str:
        """Everything received so far."""
        return self._text

    @property
    def scanned(self) -> int:
        """Characters searched for markers so far: grows with the reply, not its square."""
        return self._memo.scanned + self._read_chunk

    def feed(self, chunk: str) -> list[Delta]:
        """Take the next chunk; return the answer and reasoning text it settled."""
        text, self._text = self._text, ""
        text += chunk  # in place, as `text` holds the only reference
        self._text = text
        if self._quiet is not None:
            went_on = go_on(self._quiet, text)
            if went_on is not None:
                end = self._quiet.end
                self._quiet, looked = went_on
                self._read_chunk += looked
                return self._grow(text[end : self._quiet.end])
        return self._reread()

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
        self._quiet = None
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

    def _reread(self) -> list[Delta]:
        """Let the format settle the whole text, and learn how it goes on."""
        self.rereads += 1
        with self._memo:
            settled = self._format.settle(self._text, self._context)
        reasoning, content = settled.reasoning.strip(), settled.content.strip()
        deltas = self._advance(reasoning, content)
        quiet = settled.quiet
        if quiet is not None and quiet.grows is not None:
            sent, part = (
                (self._sent_reasoning, settled.reasoning)
                if quiet.grows == "reasoning"
                else (self._sent_content, settled.content)
            )
            if sent != (reasoning if quiet.grows == "reasoning" else content):
                quiet = None  # a part that went back on itself: read everything again
            else:
                self._blank = _trailing_space(part) if sent else ""
        self._quiet = quiet
        return deltas

    def _grow(self, piece: str) -> list[Delta]:
        """Hand out what `piece`, added to the growing part, settles."""
        if not piece or self._quiet is None or self._quiet.grows is None:
            return []
        reasoning = self._quiet.grows == "reasoning"
        sent = self._sent_reasoning if reasoning else self._sent_content
        added = self._blank + piece if sent else piece.lstrip()
        new = added.rstrip()
        if not new:
            self._blank = added if sent else ""
            return []
        self._blank = added[len(new) :]
        if reasoning:
            sent, self._sent_reasoning = self._sent_reasoning, ""
            sent += new  # in place, as above
            self._sent_reasoning = sent
            return [ReasoningDelta(text=new)]
        sent, self._sent_content = self._sent_content, ""
        sent += new
        self._sent_content = sent
        return [TextDelta(text=new)]

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


def _trailing_space(text: str) -> str:
    """The whitespace at the end of `text` (looked at from its end only)."""
    end = len(text)
    while end and text[end - 1].isspace():
        end -= 1
    return text[end:]
