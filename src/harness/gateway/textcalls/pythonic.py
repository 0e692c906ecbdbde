"""Pythonic calls (Llama 3.2 and 4, LFM2): `[get_weather(city='Paris'), now()]`.

The text is read with Python's own parser (`ast`, which never runs anything), and only
literals are accepted as values: strings, numbers, booleans, `None`, lists, tuples and
dicts, plus JSON's `true`, `false` and `null`. A call with a value that has no JSON form
(bytes, an infinite number, a variable) is reported and its siblings still run. Argument
names that Python does not allow as keywords (`from`, `max-size`) travel as `**{...}`;
tool names must be Python names.
"""

from __future__ import annotations

import ast
import keyword
import math
import re
from collections.abc import Sequence
from typing import Any, Final, cast

from harness.core.messages import ToolCall
from harness.gateway.textcalls._blocks import read_blocks
from harness.gateway.textcalls._json import dumps
from harness.gateway.textcalls._types import (
    Body,
    CallItem,
    Item,
    MalformedCall,
    ParseContext,
    Quiet,
)
from harness.gateway.textcalls.base import TextFormat, arguments_value

__all__ = ["PythonicFormat", "could_be_calls", "read_calls"]

_LIST_LINE: Final = re.compile(r"^[ \t]*\[", re.MULTILINE)
_LIST_HEAD: Final = re.compile(r"\[\s*(?:[A-Za-z_][\w.]*\s*)?")
_NAMES: Final = {"true": True, "false": False, "null": None, "True": True, "False": False}
_CUT_OFF: Final = ("was never closed", "unterminated", "unexpected EOF")


class _NotJSON(ValueError):
    """A value with no JSON form."""


class PythonicFormat(TextFormat):
    """A Python list of calls: the whole reply, or inside start and end markers."""

    def __init__(self, name: str, *, opening: str, closing: str, bare: bool) -> None:
        self.name = name
        self.markers = (opening,)
        self._closing = closing
        self._bare = bare
        wrap = "" if bare else f" between {opening} and {closing}"
        self.rules = (
            f"Write the calls as one Python list of function calls with keyword arguments"
            f"{wrap}, such as [get_weather(city='Paris'), get_time()], using only literal "
            "values (strings, numbers, True/False/None, lists and dicts).",
        )

    def read_answer(self, text: str, context: ParseContext) -> Body:
        """The calls in markers, or a list of calls that ends the reply on its own lines."""
        body = Body()
        if self.markers[0] in text or not self._bare:
            read_blocks(text, body, _read_block, opening=self.markers[0], closing=self._closing)
            return body
        for start in _list_lines(text):
            tail = text[start:].strip()
            if not could_be_calls(tail):
                continue
            items = read_calls(tail, tail, closed=True)
            if any(isinstance(item, CallItem) for item in items):
                body.content.append(text[:start])
                body.items.extend(items)
                return body
            if not text[:start].strip():
                body.items.extend(items)  # the whole reply tried to be calls: say why not
        body.content.append(text)
        return body

    def settle_answer(self, text: str, start: int) -> tuple[str, Quiet | None]:
        """Text before the first line that may start a list of calls.

        With no such line, and a last line that is not blank, the answer goes on as in the
        other formats until a new line starts.
        """
        if not self._bare:
            return self.answer_before_markers(text, start)
        end = _answer_end(text[start:])
        if end is not None:
            return self.answer_before_markers(text[: start + end], start)[0], None
        content, quiet = self.answer_before_markers(text, start)
        if quiet is not None and quiet.grows is not None:
            quiet = quiet._replace(watch=tuple(((*m, "\n"), s) for m, s in quiet.watch))
        return content, quiet

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        """One list holding every call."""
        listed = f"[{', '.join(_render(c) for c in calls)}]"
        return listed if self._bare else f"{self.markers[0]}{listed}{self._closing}"


def _answer_end(text: str) -> int | None:
    """Where a bare answer may stop before its end; `None`: nowhere yet.

    That is at a line that may start a list of calls, or at a last line that is still blank
    (its next character may start one).
    """
    for start in _list_lines(text):
        if could_be_calls(text[start:].lstrip(" \t")):
            return start
    last_line = text.rfind("\n") + 1
    return last_line if not text[last_line:].strip() else None


def _list_lines(text: str) -> list[int]:
    """Where the lines of `text` that start with `[` begin."""
    return [match.start() for match in _LIST_LINE.finditer(text)]


def could_be_calls(head: str) -> bool:
    """Whether text starting with `head` may be a list of calls (undecided counts)."""
    found = _LIST_HEAD.match(head)
    if found is None:
        return False
    if found.end() == len(head):
        return True
    return head[found.end()] == "(" and bool(head[1 : found.end()].strip())


def _read_block(inner: str, markup: str, closed: bool) -> tuple[list[Item], int | None]:
    return read_calls(inner.strip(), markup, closed=closed), None


def read_calls(source: str, markup: str, *, closed: bool) -> list[Item]:
    """The calls of a list (or of one bare call) written in Python syntax."""
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        message = getattr(error, "msg", None) or str(error) or type(error).__name__
        cut = not closed and any(sign in message for sign in _CUT_OFF)
        problem = f"the calls are not valid Python: {message}"
        return [MalformedCall(text=markup, problem=problem, truncated=cut)]
    node = tree.body
    nodes = node.elts if isinstance(node, ast.List | ast.Tuple) else [node]
    items = [_read_call(entry, source) for entry in nodes]
    return items or [MalformedCall(text=markup, problem="the list of calls is empty")]


def _read_call(node: ast.expr, source: str) -> Item:
    text = ast.get_source_segment(source, node) or source
    if not isinstance(node, ast.Call):
        problem = "each entry of the list must be a call: name(key=value)"
        return MalformedCall(text=text, problem=problem)
    name = _dotted(node.func)
    if name is None:
        return MalformedCall(text=text, problem="a call must start with the tool's name")
    if node.args:
        problem = f"the call to {name!r} must name every argument (key=value)"
        return MalformedCall(text=text, problem=problem, name=name)
    try:
        arguments = _keywords(node.keywords)
    except (_NotJSON, RecursionError) as error:
        problem = f"an argument of {name!r} cannot be sent as JSON: {error}"
        return MalformedCall(text=text, problem=problem, name=name)
    return CallItem(name=name, arguments=dumps(arguments))


def _keywords(keywords: list[ast.keyword]) -> dict[str, Any]:
    """Keyword arguments as JSON; `**{...}` carries names that are Python keywords."""
    arguments: dict[str, Any] = {}
    for item in keywords:
        if item.arg is not None:
            arguments[item.arg] = _value(item.value)
            continue
        spread = _value(item.value)
        if not isinstance(spread, dict):
            raise _NotJSON("only a dict literal can follow **")
        arguments.update(cast(dict[str, Any], spread))
    return arguments


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def _value(node: ast.expr) -> Any:
    """The JSON value of a literal; `_NotJSON` for anything else."""
    if isinstance(node, ast.Constant):
        return _constant(node.value)
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        number = _value(node.operand)
        if isinstance(number, int | float) and not isinstance(number, bool):
            return -number if isinstance(node.op, ast.USub) else number
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(element) for element in node.elts]
    if isinstance(node, ast.Dict):
        result: dict[str, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            name = None if key is None else _value(key)
            if not isinstance(name, str):
                raise _NotJSON("dictionary keys must be strings")
            result[name] = _value(value)
        return result
    raise _NotJSON(f"{ast.unparse(node)[:60]} is not a literal value")


def _constant(value: object) -> Any:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJSON(f"the number {value} has no JSON form")
        return value
    raise _NotJSON(f"a {type(value).__name__} value has no JSON form")


def _render(call: ToolCall) -> str:
    value, ok = arguments_value(call.arguments)
    if not ok or not isinstance(value, dict):
        return f"{call.name}({call.arguments})"
    items = cast(dict[str, Any], value).items()
    pairs = [f"{k}={_literal(v)}" for k, v in items if _is_name(k)]
    others = {k: v for k, v in items if not _is_name(k)}
    if others:  # keys such as `from` or `max-size` cannot be keyword arguments
        pairs.append(f"**{_literal(others)}")
    return f"{call.name}({', '.join(pairs)})"


def _is_name(key: str) -> bool:
    return key.isidentifier() and not keyword.iskeyword(key)


def _literal(value: Any) -> str:
    """A JSON value as a Python literal."""
    if isinstance(value, dict):
        entries = cast(dict[str, Any], value).items()
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in entries) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in cast(list[Any], value)) + "]"
    return repr(value)
