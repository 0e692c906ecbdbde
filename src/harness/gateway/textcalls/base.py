"""`TextFormat`: one way of writing tool calls as text, read and written.

A format reads a whole reply into a `Body` (answer pieces, reasoning pieces, calls), says
which part of a reply that is still arriving is settled (for streaming), and writes calls
and results back as text for the history and the instructions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from harness.core.messages import Message, ToolCall
from harness.gateway.textcalls._json import dumps, loads
from harness.gateway.textcalls._scan import find_first, held_back
from harness.gateway.textcalls._types import Body, ParseContext, Quiet, Settled
from harness.gateway.textcalls.reasoning import (
    THINK_TAGS,
    TagPair,
    settle_reasoning,
    split_reasoning,
)

__all__ = ["TextFormat", "arguments_text", "arguments_value"]


class TextFormat(ABC):
    """How one model family writes tool calls in plain text."""

    name: str = ""
    """The format's name, as given to `parse_text(format=...)`."""
    markers: tuple[str, ...] = ()
    """Strings that start call markup; text before the first one is answer text."""
    think_tags: tuple[TagPair, ...] = THINK_TAGS
    """Tags around reasoning at the start of a reply."""
    hidden: tuple[str, ...] = ()
    """Tokens that wrap the answer and are dropped from it."""
    rules: tuple[str, ...] = ()
    """Format-specific lines for the instructions on how to call a tool."""

    def read(self, text: str, context: ParseContext) -> Body:
        """Read a whole reply."""
        reasoning, rest = split_reasoning(
            text,
            self.think_tags,
            forced_open=context.thinking_forced_open,
            markers=self.markers,
        )
        body = self.read_answer(rest, context)
        body.reasoning.insert(0, reasoning)
        return body

    @abstractmethod
    def read_answer(self, text: str, context: ParseContext) -> Body:
        """Read the part of a reply after its reasoning: answer text and calls."""

    def settled(self, text: str, context: ParseContext) -> tuple[str, str]:
        """For a reply still arriving: the reasoning and answer text that will not change.

        Each is a prefix of what `read` gives for any continuation of `text`.
        """
        settled = self.settle(text, context)
        return settled.reasoning, settled.content

    def settle(self, text: str, context: ParseContext) -> Settled:
        """As `settled`, and how a longer text settles, so that it need not be read again."""
        reasoning, rest, quiet = settle_reasoning(
            text,
            self.think_tags,
            forced_open=context.thinking_forced_open,
            markers=self.markers,
        )
        if rest is None:
            return Settled(reasoning, "", quiet)
        content, quiet = self.settle_answer(text, rest)
        return Settled(reasoning, content, quiet)

    def settle_answer(self, text: str, start: int) -> tuple[str, Quiet | None]:
        """The settled answer of `text[start:]`, and how it goes on (`None`: unknown)."""
        return self.answer_before_markers(text, start)

    def answer_before_markers(self, text: str, start: int) -> tuple[str, Quiet | None]:
        """The answer in `text[start:]` before anything that may be a marker."""
        answer = text[start:]
        cleaned = self.unhide(answer)
        watched = (*self.markers, *self.hidden)
        found = find_first(cleaned, watched)
        if found is not None:  # nothing after the first call is answer text yet
            return cleaned[: found[0]], Quiet(None, len(text), ())
        held = held_back(cleaned, watched)
        content = cleaned[: len(cleaned) - held]
        end = len(text) - held
        dropped = len(answer) - len(cleaned)
        if dropped and not _dropped_before(answer, self.hidden, dropped, end - start):
            return content, None  # the answer does not go on as the text does
        return content, Quiet("content", end, ((watched, end),))

    def unhide(self, text: str) -> str:
        """`text` without the tokens that wrap the answer."""
        for token in self.hidden:
            text = text.replace(token, "")
        return text

    @abstractmethod
    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        """The calls as this format writes them, for the history and the instructions."""

    def render_results(self, results: Sequence[Message]) -> str:
        """Tool results as text for the next user turn."""
        return "\n\n".join(
            f'<tool_result name="{m.name or ""}" id="{m.tool_call_id or ""}">\n'
            f"{m.content or ''}\n</tool_result>"
            for m in results
        )

    def results_intro(self) -> str:
        """How the instructions describe the way results come back."""
        return "inside <tool_result> tags"


def _dropped_before(text: str, tokens: Sequence[str], dropped: int, end: int) -> bool:
    """Whether the `dropped` characters were just the tokens' own places, all before `end`."""
    if sum(text.count(t) * len(t) for t in tokens) != dropped:
        return False  # dropping one token made another
    return all(text.rfind(t) + len(t) <= end for t in tokens if t in text)


def arguments_value(arguments: str) -> tuple[Any, bool]:
    """The decoded arguments of a call, or the raw text when it is not JSON: (value, ok)."""
    try:
        return loads(arguments), True
    except ValueError:
        return arguments, False


def arguments_text(arguments: str) -> str:
    """Arguments as compact JSON for writing into markup; invalid JSON stays as it was."""
    value, ok = arguments_value(arguments)
    return dumps(value) if ok else arguments
