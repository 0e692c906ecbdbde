"""The data a text parser produces: what the model said, what it called, what went wrong."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from harness.core.messages import ToolCall, ToolDefinition

__all__ = [
    "Body",
    "CallItem",
    "Item",
    "MalformedCall",
    "ParseContext",
    "PartialCall",
    "Quiet",
    "Settled",
    "TextParse",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class MalformedCall:
    """Call markup that could not be turned into a call; nothing of it runs."""

    text: str
    """The markup as the model wrote it."""
    problem: str
    """What is wrong with it, in words the model can act on."""
    name: str | None = None
    """The tool's name, when it could be read."""
    arguments: str | None = None
    """The arguments text as far as it could be read, when it could be found."""
    truncated: bool = False
    """The text ended before the call was complete (generation stopped, or a snapshot)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PartialCall:
    """The call still being written at the end of a snapshot of an unfinished reply."""

    name: str | None
    """The tool's name, once it has been written."""
    arguments: str
    """The arguments text so far, exactly as written."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TextParse:
    """A model's raw reply split into answer, reasoning and tool calls."""

    content: str | None
    """The answer without call markup or reasoning, stripped; `None` when empty."""
    reasoning: str | None
    """Reasoning text (`<think>`, harmony analysis, ...), stripped; `None` when empty."""
    calls: tuple[ToolCall, ...] = ()
    """The calls to run, in order. `arguments` is JSON, or the text as written when the name
    is certain but the arguments are not JSON (the tool then tells the model so)."""
    malformed: tuple[MalformedCall, ...] = ()
    """Call markup that could not be read; the model must be told about each one."""
    format: str = "plain"
    """The format that was used to read the reply."""
    partial: PartialCall | None = None
    """For a snapshot (`partial=True`): the call still being written, if any."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ParseContext:
    """What a parser needs to know beside the text."""

    tools: tuple[ToolDefinition, ...] = ()
    """The offered tools: their schemas type XML values and tell real tools from others."""
    thinking_forced_open: bool = False
    """The prompt ends inside `<think>`, so the reply starts with reasoning."""

    def tool(self, name: str) -> ToolDefinition | None:
        """The offered tool called `name`, or `None`."""
        return next((t for t in self.tools if t.name == name), None)


@dataclass(frozen=True, kw_only=True, slots=True)
class CallItem:
    """A call whose name is certain; its arguments may still be invalid JSON."""

    name: str
    arguments: str
    """JSON text, or the raw text the model wrote when that is not valid JSON."""
    id: str | None = None
    """The id the model wrote, if the format has one."""
    cut_off: bool = False
    """The text ended inside the arguments."""


Item = CallItem | MalformedCall


@dataclass(kw_only=True, slots=True)
class Body:
    """What a format reads from a reply: answer pieces, reasoning pieces, calls in order."""

    content: list[str] = field(default_factory=lambda: [])
    reasoning: list[str] = field(default_factory=lambda: [])
    items: list[Item] = field(default_factory=lambda: [])


Watch = tuple[tuple[str, ...], int]
"""Markers, and where in the text to look for them."""


class Quiet(NamedTuple):
    """How the settled text goes on while a reply grows without certain markers.

    As long as none of the markers of `watch` appears at or after its position, a longer
    text settles the same reasoning and answer, except that the part named by `grows`
    takes the new text from `end` on, up to where one of those markers may be beginning.
    """

    grows: Literal["reasoning", "content"] | None
    end: int
    """Where in the text the growing part ends so far."""
    watch: tuple[Watch, ...]


class Settled(NamedTuple):
    """What a format settles of a reply still arriving (see `TextFormat.settle`)."""

    reasoning: str
    content: str
    quiet: Quiet | None = None
    """How it goes on for a longer text; `None` when only reading it again can tell."""
