"""Cutting a conversation down to a token budget: whole turns first, then message text.

A turn is a unit that is never split: an assistant message with the tool messages that
answer it, or any other message alone. Text is cut in the middle, keeping its head and
tail, with a note that says how much is missing.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from typing import Final

from harness.core.messages import Message, ToolCall
from harness.memory.tokens import TokenCounter

__all__ = [
    "MIN_CUT_CHARS",
    "cap_message",
    "cut_largest",
    "cut_text",
    "head_length",
    "shrink",
    "split_turns",
]

MIN_CUT_CHARS: Final = 160
"""Text this short is never cut: the note would be as long as what it saves."""

Turn = tuple[Message, ...]


def head_length(messages: Sequence[Message]) -> int:
    """How many leading messages are never removed: the system prompts and the task."""
    n = 0
    while n < len(messages) and messages[n].role == "system":
        n += 1
    if n < len(messages) and messages[n].role == "user":
        n += 1
    return n


def split_turns(messages: Sequence[Message]) -> list[Turn]:
    """Group messages into turns; tool messages always stay with the turn before them."""
    turns: list[list[Message]] = []
    for message in messages:
        if message.role == "tool" and turns:
            turns[-1].append(message)
        else:
            turns.append([message])
    return [tuple(t) for t in turns]


def cut_text(text: str, max_chars: int, *, brief: bool = False) -> str:
    """`text` in at most about `max_chars` characters: head and tail, with a cut note.

    A `brief` note says only how much was cut (for transcripts the model summarizes).
    """
    if len(text) <= max_chars:
        return text
    note = _brief_note if brief else _note
    keep = max(0, max_chars - len(note(len(text), len(text))))
    head = text[: keep - keep // 2]
    tail = text[len(text) - keep // 2 :] if keep >= 2 else ""
    return head + note(len(text) - len(head) - len(tail), len(text)) + tail


def _note(cut: int, total: int) -> str:
    return f"\n[... {cut:,} of {total:,} characters cut here to fit the context window ...]\n"


def _brief_note(cut: int, total: int) -> str:
    return f" [...{cut:,} chars cut...] "


def shrink(message: Message, excess: int, counter: TokenCounter) -> Message | None:
    """A copy of `message` about `excess` tokens smaller, or `None` when it cannot shrink.

    Reasoning goes first, then the longest of the content and the call arguments is cut
    (arguments are replaced by a small JSON object saying they were cut).
    """
    if message.reasoning:
        return dataclasses.replace(message, reasoning=None)
    sizes = [len(message.content or "")] + [len(c.arguments) for c in message.tool_calls]
    longest = max(range(len(sizes)), key=sizes.__getitem__)
    if sizes[longest] <= MIN_CUT_CHARS:
        return None
    if longest > 0:
        calls = list(message.tool_calls)
        calls[longest - 1] = _cut_call(calls[longest - 1])
        return dataclasses.replace(message, tool_calls=tuple(calls))
    content = message.content or ""
    tokens = max(1, counter.text_tokens(content))
    keep = math.floor(len(content) * max(0, tokens - excess) / tokens * 0.9)
    return dataclasses.replace(message, content=cut_text(content, min(keep, len(content) - 1)))


def _cut_call(call: ToolCall) -> ToolCall:
    note = f"{len(call.arguments):,} characters of arguments were cut to fit the context window"
    return dataclasses.replace(call, arguments=json.dumps({"_cut": note}))


def cap_message(message: Message, limit: int, counter: TokenCounter) -> Message:
    """`message`, or a copy cut down to at most `limit` tokens when it is longer."""
    while (excess := counter.message_tokens(message) - limit) > 0:
        smaller = shrink(message, excess, counter)
        if smaller is None:
            break
        message = smaller
    return message


def cut_largest(
    messages: list[Message],
    budget: int,
    measure: Callable[[Sequence[Message]], int],
    counter: TokenCounter,
) -> set[int] | None:
    """Cut the largest messages, in place, until `measure(messages) <= budget`.

    Returns:
        The indexes of the messages that were cut, or `None` when the budget cannot be
        reached however much is cut.
    """
    cut: set[int] = set()
    stuck: set[int] = set()
    while (excess := measure(messages) - budget) > 0:
        candidates = [i for i in range(len(messages)) if i not in stuck]
        if not candidates:
            return None
        largest = max(candidates, key=lambda i: counter.message_tokens(messages[i]))
        smaller = shrink(messages[largest], excess, counter)
        if smaller is None:
            stuck.add(largest)
        else:
            messages[largest] = smaller
            cut.add(largest)
    return cut
