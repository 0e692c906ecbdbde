"""Llama 3.x JSON calls: `{"name": ..., "parameters": {...}}`, one or more, anywhere in the text.

As in vLLM, prose around the calls is dropped when there is a call: Llama 3 is told to
answer with the calls only. A JSON object that is not a call (no name, or the model quoting
its arguments) is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final, cast

from harness.core.messages import ToolCall
from harness.gateway.textcalls._json import (
    balanced_end,
    decode_at,
    describe,
    dumps,
    is_cut_off,
    loads_repaired,
)
from harness.gateway.textcalls._objects import call_from_object, partial_object
from harness.gateway.textcalls._types import (
    Body,
    CallItem,
    Item,
    MalformedCall,
    ParseContext,
    Quiet,
)
from harness.gateway.textcalls.base import TextFormat, arguments_text

__all__ = ["Llama3JsonFormat"]

PYTHON_TAG: Final = "<|python_tag|>"
_CALL_START: Final = re.compile(r'\{\s*"name"\s*:')


class Llama3JsonFormat(TextFormat):
    """JSON call objects separated by `;` or newlines (Llama 3.1, 3.2, 3.3)."""

    name = "llama3_json"
    rules = (
        'Write each call as one JSON object with the keys "name" and "parameters", '
        "each on its own line, and write nothing else in a reply that calls tools.",
    )

    def read_answer(self, text: str, context: ParseContext) -> Body:
        """Read every call object in the text; the text is the answer only without calls."""
        cleaned = text.replace(PYTHON_TAG, "")
        items: list[Item] = []
        position = 0
        while (start := cleaned.find("{", position)) >= 0:
            item, position = self._read_object(cleaned, start, context)
            if item is not None:
                items.append(item)
        if any(isinstance(item, CallItem) for item in items):
            return Body(items=items)
        return Body(content=[cleaned], items=items)

    def _read_object(self, text: str, start: int, context: ParseContext) -> tuple[Item | None, int]:
        """The call (or failed call) at `start`, and where to look next."""
        try:
            value, end = decode_at(text, start)
        except ValueError as error:
            end = balanced_end(text, start)
            chunk = text[start:end]
            try:
                value, _ = loads_repaired(chunk)
            except ValueError:
                return _failed(chunk, error, end is None), len(text) if end is None else end
            end = start + len(chunk)
        return _call_or_none(value, text[start:end], context), end

    def settle_answer(self, text: str, start: int) -> tuple[str, Quiet | None]:
        """Nothing is settled before the end: a call anywhere drops the prose around it."""
        return "", Quiet(None, len(text), ())

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        """One JSON object per line."""
        return "\n".join(
            f'{{"name": {dumps(c.name)}, "parameters": {arguments_text(c.arguments)}}}'
            for c in calls
        )


def _failed(chunk: str, error: ValueError, open_ended: bool) -> MalformedCall | None:
    """A call object that is not valid JSON; other broken braces are just text."""
    if not _CALL_START.match(chunk):
        return None
    name, raw = partial_object(chunk)
    cut = open_ended and is_cut_off(chunk, error)
    return MalformedCall(
        text=chunk, problem=describe(chunk, error), name=name, arguments=raw, truncated=cut
    )


def _call_or_none(value: Any, markup: str, context: ParseContext) -> Item | None:
    if not isinstance(value, dict):
        return None
    obj = cast(dict[str, Any], value)
    name = obj.get("name")
    if "parameters" in obj or "arguments" in obj:
        found = call_from_object(obj)
        return found if isinstance(found, CallItem) else None
    if isinstance(name, str) and context.tool(name) is not None:
        problem = f'the call to {name!r} has no "parameters" (write "parameters": {{}} if none)'
        return MalformedCall(text=markup, problem=problem, name=name)
    return None
