"""Mistral: calls after `[TOOL_CALLS]`.

The marker is followed by a JSON array (7B v0.3, Nemo), or by `name{json}` (tokenizer v11+),
`name[ARGS]{json}` (Devstral) or `name[CALL_ID]id[ARGS]{json}` (Small 3.2). All variants are
read by one parser; the format name only chooses how calls are written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, Literal

from harness.core.messages import ToolCall
from harness.gateway.textcalls._json import decode_at, describe, dumps, is_cut_off
from harness.gateway.textcalls._objects import items_from_value, named_call, partial_object
from harness.gateway.textcalls._types import Body, CallItem, MalformedCall, ParseContext
from harness.gateway.textcalls.base import TextFormat, arguments_text

__all__ = ["MistralFormat"]

MARKER: Final = "[TOOL_CALLS]"
CALL_ID: Final = "[CALL_ID]"
ARGS: Final = "[ARGS]"
_NAMED: Final = re.compile(
    r"\s*(?P<name>[A-Za-z0-9_.\-]+)\s*"
    r"(?:\[CALL_ID\]\s*(?P<id>[^\[{\s]*)\s*)?(?P<args_marker>\[ARGS\])?(?=\s*\{|\s*$)",
    re.S,
)
_ARRAY: Final = re.compile(r"\[\s*\{")

Style = Literal["array", "name_args", "call_id"]


class MistralFormat(TextFormat):
    """Calls after `[TOOL_CALLS]`, in any of Mistral's variants."""

    markers = (MARKER,)

    def __init__(self, name: str, style: Style) -> None:
        self.name = name
        self._style: Style = style
        self.rules = _RULES[style]

    def read_answer(self, text: str, context: ParseContext) -> Body:
        """Answer text before the first marker, then the calls."""
        first, *sections = text.split(MARKER)
        body = Body(content=[first])
        if len(sections) > 1 and any(_NAMED.match(s) is None for s in sections):
            problem = (
                f"{MARKER} appears {len(sections)} times, but calls written as a JSON array "
                f"must all be in one array after a single {MARKER}"
            )
            body.items.append(MalformedCall(text=text[len(first) :], problem=problem))
            return body
        for section in sections:
            _read_section(section, body)
        return body

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        """The calls in this variant's form."""
        if self._style == "array":
            entries = ", ".join(
                f'{{"name": {dumps(c.name)}, "arguments": {arguments_text(c.arguments)}}}'
                for c in calls
            )
            return f"{MARKER}[{entries}]"
        if self._style == "name_args":
            return "".join(f"{MARKER}{c.name}{ARGS}{arguments_text(c.arguments)}" for c in calls)
        return "".join(
            f"{MARKER}{c.name}{CALL_ID}{c.id}{ARGS}{arguments_text(c.arguments)}" for c in calls
        )


def _read_section(section: str, body: Body) -> None:
    """One `[TOOL_CALLS]` section: a named call, a JSON array, or (with no JSON) text."""
    named = _NAMED.match(section)
    if named is not None:
        rest = section[named.end() :]
        if not rest.strip() and not named.group("args_marker"):
            problem = f"the call to {named['name']!r} has no arguments (write {{}} if none)"
            malformed = MalformedCall(text=MARKER + section, problem=problem, name=named["name"])
            body.items.append(malformed)
            return
        body.items.append(_named(named["name"], named["id"] or None, rest))
        return
    array = _ARRAY.search(section)
    if array is None:  # no JSON at all: the marker was followed by prose
        body.content.append(section)
        return
    try:
        value, _ = decode_at(section, array.start())
    except ValueError as error:
        tail = section[array.start() :]
        name, raw = partial_object(tail.lstrip("[ \n\t"))
        cut = is_cut_off(tail, error)
        problem = describe(tail, error)
        body.items.append(
            MalformedCall(
                text=MARKER + section, problem=problem, name=name, arguments=raw, truncated=cut
            )
        )
        return
    # Text after the array is dropped, as in vLLM: the turn ended with the calls.
    body.items.extend(items_from_value(value, MARKER + section))


def _named(name: str, call_id: str | None, rest: str) -> CallItem:
    start = len(rest) - len(rest.lstrip())
    try:
        _, end = decode_at(rest, start)
    except ValueError:
        return named_call(name, rest, call_id=call_id, closed=False)
    # Anything after the JSON before the next marker is dropped with the call's section.
    return named_call(name, rest[start:end], call_id=call_id)


_RULES: Final[dict[Style, tuple[str, ...]]] = {
    "array": (
        f"Write {MARKER} followed by one JSON array that holds every call as an object "
        'with the keys "name" and "arguments".',
    ),
    "name_args": (f"Write each call as {MARKER}, the tool name, {ARGS}, then a JSON object.",),
    "call_id": (
        f"Write each call as {MARKER}, the tool name, {CALL_ID}, a 9-character id of letters "
        f"and digits, {ARGS}, then a JSON object.",
    ),
}
