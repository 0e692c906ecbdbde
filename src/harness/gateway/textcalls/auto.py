"""`auto`: the format is chosen from what the reply contains, else from the model family.

The earliest call marker of any known format decides. Without one, a reply that starts
with a JSON object is Llama 3 JSON and one that starts like `[name(` is pythonic;
otherwise the model family's format (or plain text) reads it. Markers inside closed
reasoning do not count. While a reply is still arriving, only text before every possible
marker is settled, so what streams is never taken back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final, Literal

from harness.core.messages import Message, ToolCall
from harness.gateway.textcalls._scan import find_first, held_back
from harness.gateway.textcalls._types import Body, ParseContext, Quiet, Settled
from harness.gateway.textcalls.base import TextFormat
from harness.gateway.textcalls.harmony import could_be_header
from harness.gateway.textcalls.llama3 import PYTHON_TAG
from harness.gateway.textcalls.pythonic import could_be_calls
from harness.gateway.textcalls.reasoning import THINK_TAGS, opening, settle_reasoning
from harness.gateway.textcalls.registry import FORMATS

__all__ = ["AutoFormat"]

Decider = Callable[[str, bool], str | None]
"""Picks the format from the text after a marker; `None` while that text is too short."""

_FUNCTION_HEAD: Final = re.compile(r"[^>\s]*>")


def _after_tool_call(after: str, final: bool) -> str | None:
    head = after.lstrip()
    if head.startswith("<function="):
        return "qwen3_coder"
    if "<function=".startswith(head) and not final:
        return None
    return "hermes"


def _after_function(after: str, final: bool) -> str | None:
    name = _FUNCTION_HEAD.match(after)
    rest = after[name.end() :].lstrip() if name else ""
    if rest.startswith("{"):
        return "functionary_v3.1"
    if not final and (name is None or not rest):
        return None
    return "qwen3_coder"


def _fixed(name: str) -> Decider:
    return lambda _after, _final: name


_HARMONY = ("<|channel|>", "<|start|>", "<|message|>", "<|constrain|>", "<|call|>", "<|end|>")
_SNIFF: Final[dict[str, Decider]] = {
    "<tool_call>": _after_tool_call,
    "<function=": _after_function,
    "[TOOL_CALLS]": _fixed("mistral"),
    **{token: _fixed("harmony") for token in (*_HARMONY, "<|return|>", "to=functions.")},
    "<｜tool▁calls▁begin｜>": _fixed("deepseek_v3"),
    "<｜tool▁call▁begin｜>": _fixed("deepseek_v3"),
    "<|tool_calls_section_begin|>": _fixed("kimi_k2"),
    "<|tool_call_begin|>": _fixed("kimi_k2"),
    "<|tool_call_start|>": _fixed("pythonic_lfm2"),
    "<|python_start|>": _fixed("pythonic"),
    "<|START_ACTION|>": _fixed("command_r7b"),
    "<|START_RESPONSE|>": _fixed("command_r7b"),
    "<|END_RESPONSE|>": _fixed("command_r7b"),
}
MARKERS: Final = tuple(_SNIFF)
"""Every marker that decides a format."""


class AutoFormat(TextFormat):
    """Chooses the format per reply.

    Args:
        fallback: The model family's format: read replies with no marker, and write
            the instructions and history. `None` reads such replies as plain text and
            writes calls in the Hermes form, which most open models know.
    """

    name = "auto"
    markers = MARKERS

    def __init__(self, fallback: TextFormat | None = None) -> None:
        self.fallback = fallback
        self.writer = fallback or FORMATS["hermes"]
        self.rules = self.writer.rules

    def resolve(self, text: str, context: ParseContext) -> TextFormat:
        """The format that reads this whole reply."""
        return self.choose(text, context, final=True) or FORMATS["plain"]

    def choose(self, text: str, context: ParseContext, *, final: bool) -> TextFormat | None:
        """The format of `text`; before the end (`final=False`), `None` until it is certain."""
        region = _region(text, context, final)
        if region is None:
            return None
        found = find_first(region, MARKERS)
        if found is not None:
            index, marker = found
            name = _SNIFF[marker](region[index + len(marker) :], final)
            return None if name is None else self._prefer(FORMATS[name])
        if not final:
            return None
        head = region.lstrip()
        if head.startswith(("{", PYTHON_TAG)):
            return self._prefer(FORMATS["llama3_json"])
        if head.startswith("[") and could_be_calls(head):
            return self._prefer(FORMATS["pythonic"])
        return self.fallback or FORMATS["plain"]

    def _prefer(self, found: TextFormat) -> TextFormat:
        """The family's own variant when it is read by the same parser."""
        if self.fallback is not None and type(self.fallback) is type(found):
            return self.fallback
        return found

    def read(self, text: str, context: ParseContext) -> Body:
        """Read with the chosen format."""
        return self.resolve(text, context).read(text, context)

    def read_answer(self, text: str, context: ParseContext) -> Body:
        """Read with the chosen format."""
        return self.resolve(text, context).read_answer(text, context)

    def settle(self, text: str, context: ParseContext) -> Settled:
        """Text before every possible marker, once no format is certain yet."""
        chosen = self.choose(text, context, final=False)
        if chosen is not None:
            return chosen.settle(text, context)
        reasoning, rest, quiet = settle_reasoning(
            text, THINK_TAGS, forced_open=context.thinking_forced_open, markers=MARKERS
        )
        content = ""
        if rest is not None:
            content, quiet = _settle_answer(text, rest)
        if self.fallback is None:
            return Settled(reasoning, content, quiet)
        # Without a marker the family's format reads the reply: settle for both.
        mine, other = Settled(reasoning, content, quiet), self.fallback.settle(text, context)
        both = Settled(
            _common_prefix(reasoning, other.reasoning), _common_prefix(content, other.content)
        )
        return both._replace(quiet=_both(mine, other, both))

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        """Calls in the writer's form."""
        return self.writer.render_calls(calls)

    def render_results(self, results: Sequence[Message]) -> str:
        """Results in the writer's form."""
        return self.writer.render_results(results)

    def results_intro(self) -> str:
        """As the writer says."""
        return self.writer.results_intro()


def _region(text: str, context: ParseContext, final: bool) -> str | None:
    """Where markers count: after closed reasoning, or from the start of open reasoning."""
    opened = opening(text, THINK_TAGS, context.thinking_forced_open)
    if opened == "undecided":
        return text if final else None
    if opened is None:
        return text
    start, closers = opened
    closed = find_first(text, closers, start)
    if closed is not None:
        return text[closed[0] + len(closed[1]) :]
    return text[start:] if final else None


def _settle_answer(text: str, start: int) -> tuple[str, Quiet | None]:
    """The answer settled while no format is certain, and how it goes on."""
    tail = text[start:]
    head = tail.lstrip()
    if not head or head.startswith("{") or could_be_calls(head) or could_be_header(head):
        return "", None
    if PYTHON_TAG.startswith(head[: len(PYTHON_TAG)]):
        return "", None
    found = find_first(tail, MARKERS)
    if found is not None:  # a marker whose format is not certain yet
        return tail[: found[0]], None
    held = held_back(tail, MARKERS)
    end = len(text) - held
    return tail[: len(tail) - held], Quiet("content", end, ((MARKERS, end),))


def _both(first: Settled, second: Settled, both: Settled) -> Quiet | None:
    """How what two readings have in common (`both`) goes on, when they can tell."""
    if first.quiet is None or second.quiet is None:
        return None
    watch = first.quiet.watch + second.quiet.watch
    end = min(first.quiet.end, second.quiet.end)
    grows = first.quiet.grows
    if first[:2] == second[:2] and grows == second.quiet.grows:
        if grows is None or first.quiet.end == second.quiet.end:
            return Quiet(grows, end, watch)
    for reading in (first, second):  # a common part that stops short of a growing one stays
        part = reading.quiet.grows if reading.quiet else None
        if part is not None and len(_part(reading, part)) <= len(_part(both, part)):
            return None
    return Quiet(None, end, watch)


def _part(settled: Settled, part: Literal["reasoning", "content"]) -> str:
    return settled.reasoning if part == "reasoning" else settled.content


def _common_prefix(first: str, second: str) -> str:
    if second.startswith(first):
        return first
    low, high = 0, min(len(first), len(second))  # the prefix is low..high long
    while low < high:
        middle = (low + high + 1) // 2
        if first[:middle] == second[:middle]:
            low = middle
        else:
            high = middle - 1
    return first[:low]
