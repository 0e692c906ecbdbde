"""Qwen3-Coder and Qwen 3.5: XML-style calls.

    <tool_call>
    <function=NAME>
    <parameter=KEY>
    value
    </parameter>
    </function>
    </tool_call>

Values are text, typed from the tool's schema. Exactly one newline after `<parameter=KEY>`
and one before `</parameter>` belong to the markup; the rest is the value. Some outputs
omit the opening `<tool_call>`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final, cast

from harness.core.messages import Message, ToolCall
from harness.gateway.textcalls._blocks import read_json_block
from harness.gateway.textcalls._coerce import coerce
from harness.gateway.textcalls._json import dumps
from harness.gateway.textcalls._scan import find_first
from harness.gateway.textcalls._types import Body, CallItem, Item, MalformedCall, ParseContext
from harness.gateway.textcalls.base import TextFormat, arguments_value
from harness.gateway.textcalls.hermes import tool_responses

__all__ = ["Qwen3CoderFormat"]

OPEN: Final = "<tool_call>"
CLOSE: Final = "</tool_call>"
FUNCTION: Final = "<function="
FUNCTION_END: Final = "</function>"
PARAMETER: Final = "<parameter="
PARAMETER_END: Final = "</parameter>"
_HEAD: Final = re.compile(r"<(function|parameter)=([^>\n]*)>")


class Qwen3CoderFormat(TextFormat):
    """`<function=NAME>` calls with one `<parameter=KEY>` per argument."""

    name = "qwen3_coder"
    markers = (OPEN, FUNCTION)
    rules = (
        "Write each call inside <tool_call></tool_call> as <function=NAME>, then one "
        "<parameter=KEY> block per argument, then </function>. Write string values as plain "
        "text, other values as JSON.",
    )

    def read_answer(self, text: str, context: ParseContext) -> Body:
        """Answer text and calls, with or without the `<tool_call>` wrapper."""
        body = Body()
        position = 0
        while (found := find_first(text, self.markers, position)) is not None:
            index, marker = found
            body.content.append(text[position:index])
            if marker == OPEN:
                position = _read_wrapped(text, index + len(OPEN), body, context)
            else:
                end = text.find(FUNCTION_END, index)
                stop = len(text) if end < 0 else end + len(FUNCTION_END)
                body.items.append(_read_function(text[index:stop], context))
                position = _skip_close(text, stop)
        body.content.append(text[position:])
        return body

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        """Each call as a `<tool_call>` block with one `<parameter>` per argument."""
        return "\n".join(_render(c) for c in calls)

    def render_results(self, results: Sequence[Message]) -> str:
        """Each result in a `<tool_response>` block, as Qwen's templates write them."""
        return tool_responses(results)

    def results_intro(self) -> str:
        """Results come back in `<tool_response>` blocks."""
        return "inside <tool_response> tags"


def _read_wrapped(text: str, start: int, body: Body, context: ParseContext) -> int:
    """The functions in one `<tool_call>` block; returns where the block ends."""
    close = text.find(CLOSE, start)
    end = len(text) if close < 0 else close
    inner = text[start:end]
    markup = text[start - len(OPEN) : end + (len(CLOSE) if close >= 0 else 0)]
    if FUNCTION not in inner:
        # A JSON object in the block: the Hermes form, which these models also write.
        items, _ = read_json_block(inner, markup, close >= 0)
        body.items.extend(items)
    else:
        position = inner.find(FUNCTION)
        while position >= 0:
            stop = inner.find(FUNCTION_END, position)
            stop = len(inner) if stop < 0 else stop + len(FUNCTION_END)
            body.items.append(_read_function(inner[position:stop], context))
            position = inner.find(FUNCTION, stop)
    return end + len(CLOSE) if close >= 0 else end


def _skip_close(text: str, position: int) -> int:
    """Past a `</tool_call>` that closes a block whose opening tag was missing."""
    rest = text[position:]
    stripped = rest.lstrip()
    if stripped.startswith(CLOSE):
        return position + len(rest) - len(stripped) + len(CLOSE)
    return position


def _read_function(markup: str, context: ParseContext) -> Item:
    """One `<function=NAME>...</function>`, possibly cut off."""
    head = _HEAD.match(markup)
    if head is None or head.group(1) != "function":
        return MalformedCall(
            text=markup, problem="the call ends inside <function=NAME>", truncated=True
        )
    name = head.group(2).strip()
    closed = markup.endswith(FUNCTION_END)
    inner = markup[head.end() : len(markup) - len(FUNCTION_END) if closed else len(markup)]
    values = _parameters(inner)
    tool = context.tool(name)
    properties = cast(dict[str, Any], (tool.parameters if tool else {}).get("properties") or {})
    arguments = {key: coerce(value, properties.get(key)) for key, value in values.items()}
    if not closed:
        problem = f"the call to {name!r} ends before {FUNCTION_END}"
        return MalformedCall(
            text=markup, problem=problem, name=name, arguments=dumps(arguments), truncated=True
        )
    return CallItem(name=name, arguments=dumps(arguments))


def _parameters(inner: str) -> dict[str, str]:
    """The text of each `<parameter=KEY>`, by KEY.

    A value ends at `</parameter>`, or at the next `<parameter=` when that tag is missing.
    """
    values: dict[str, str] = {}
    position = inner.find(PARAMETER)
    while position >= 0:
        head = _HEAD.match(inner, position)
        if head is None:
            break
        start = head.end()
        close = inner.find(PARAMETER_END, start)
        following = inner.find(PARAMETER, start)
        if close < 0 or 0 <= following < close:
            end = following if following >= 0 else len(inner)
            values[head.group(2).strip()] = _trim(inner[start:end].rstrip("\n"))
            position = following
            continue
        values[head.group(2).strip()] = _trim(inner[start:close])
        position = inner.find(PARAMETER, close)
    return values


def _trim(value: str) -> str:
    """Drop the one newline on each side that belongs to the markup."""
    value = value.removeprefix("\n")
    return value.removesuffix("\n")


def _render(call: ToolCall) -> str:
    value, ok = arguments_value(call.arguments)
    if not ok or not isinstance(value, dict):
        inner = f"{call.arguments}\n"
    else:
        items = cast(dict[str, Any], value).items()
        inner = "".join(
            f"{PARAMETER}{key}>\n{_text(item)}\n{PARAMETER_END}\n" for key, item in items
        )
    return f"{OPEN}\n{FUNCTION}{call.name}>\n{inner}{FUNCTION_END}\n{CLOSE}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else dumps(value)
