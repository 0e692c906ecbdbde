r"""Text a model sends, made encodable: lone UTF-16 surrogates become U+FFFD.

JSON may escape half of a surrogate pair (`"\ud800"`), and Python decodes it into a `str`
that cannot be encoded as UTF-8: writing it to a file, a socket or the store fails far from
where it came in. Whatever comes from a model passes through here first.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Final, TypeVar, cast

from harness.core.messages import Message, ToolCall

__all__ = ["REPLACEMENT", "clean_json", "clean_message", "clean_text"]

REPLACEMENT: Final = "\ufffd"
"""What a lone surrogate becomes: the Unicode replacement character."""

_SURROGATE: Final = re.compile("[\ud800-\udfff]")

_T = TypeVar("_T")


def clean_text(text: str) -> str:
    """`text` with a surrogate pair joined into its character and a lone half replaced."""
    if text.isascii() or not _SURROGATE.search(text):  # isascii() reads a flag
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def clean_json(value: _T) -> _T:
    """A JSON value (strings, lists, dicts, scalars) with every string and key cleaned.

    Returns the same object when there is nothing to clean (found without copying).
    """
    if not _json_has_surrogate(value):
        return value
    if isinstance(value, str):
        return cast(_T, clean_text(value))
    if isinstance(value, list):
        return cast(_T, [clean_json(item) for item in cast(list[Any], value)])
    if isinstance(value, dict):
        items = cast(dict[Any, Any], value).items()
        return cast(_T, {clean_json(key): clean_json(item) for key, item in items})
    return value


def clean_message(message: Message) -> Message:
    """`message` with its text, reasoning, tool calls and provider data cleaned.

    Returns the same object when there was nothing to clean (the usual case, found
    without copying anything).
    """
    if not _has_surrogate(message):
        return message
    return dataclasses.replace(
        message,
        content=None if message.content is None else clean_text(message.content),
        reasoning=None if message.reasoning is None else clean_text(message.reasoning),
        tool_calls=tuple(_clean_call(call) for call in message.tool_calls),
        provider_data=clean_json(message.provider_data),
    )


def _has_surrogate(message: Message) -> bool:
    for text in (message.content, message.reasoning):
        if text and not text.isascii() and _SURROGATE.search(text):
            return True
    for call in message.tool_calls:
        for text in (call.id, call.name, call.arguments):
            if not text.isascii() and _SURROGATE.search(text):
                return True
    return message.provider_data is not None and _json_has_surrogate(message.provider_data)


def _json_has_surrogate(value: object) -> bool:
    if isinstance(value, str):
        return not value.isascii() and _SURROGATE.search(value) is not None
    if isinstance(value, list):
        return any(_json_has_surrogate(item) for item in cast(list[Any], value))
    if isinstance(value, dict):
        items = cast(dict[Any, Any], value).items()
        return any(_json_has_surrogate(k) or _json_has_surrogate(v) for k, v in items)
    return False


def _clean_call(call: ToolCall) -> ToolCall:
    return ToolCall(
        id=clean_text(call.id), name=clean_text(call.name), arguments=clean_text(call.arguments)
    )
