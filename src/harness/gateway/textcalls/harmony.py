"""gpt-oss harmony: messages with headers, channels and recipients.

A message is `<|start|>ROLE [to=RECIPIENT]<|channel|>CHANNEL [to=RECIPIENT] [<|constrain|>TYPE]
<|message|>BODY` ended by `<|end|>`, `<|call|>` or `<|return|>`. The reply begins after
the prompt's `<|start|>assistant`, so its first header may lack the role, and some servers
drop the final `<|call|>`. A message to `functions.NAME` is a call; the analysis channel is
reasoning; the final and commentary channels are the answer. Calls to tools that were not
offered (gpt-oss's built-in `container.exec`, `browser.*`, ...) are reported, not run.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, cast

from harness.core.messages import ToolCall
from harness.gateway.textcalls._objects import named_call
from harness.gateway.textcalls._scan import find_first, resume, save, settled_span, watch
from harness.gateway.textcalls._types import (
    Body,
    Item,
    MalformedCall,
    ParseContext,
    Quiet,
    Settled,
)
from harness.gateway.textcalls.base import TextFormat, arguments_text
from harness.gateway.textcalls.reasoning import settle_reasoning

__all__ = ["HarmonyFormat", "could_be_header"]

START: Final = "<|start|>"
CHANNEL: Final = "<|channel|>"
CONSTRAIN: Final = "<|constrain|>"
MESSAGE: Final = "<|message|>"
END: Final = "<|end|>"
CALL: Final = "<|call|>"
RETURN: Final = "<|return|>"
TOKENS: Final = (START, CHANNEL, CONSTRAIN, MESSAGE, END, CALL, RETURN)
_ENDS: Final = (END, CALL, RETURN)
_NOT_TOOLS: Final = frozenset({"assistant", "user", "system", "developer", "all"})
_FUNCTIONS: Final = "functions."
_ROLE: Final = "assistant"
_HEADER_REST: Final = re.compile(r"\s*(?:assistant\b)?\s*(?:to=[^\s<]+)?\s*")
"""What may come before the first channel: the rest of the prompt's `<|start|>assistant`."""


@dataclass(frozen=True, kw_only=True, slots=True)
class _Message:
    header: str | None
    """Header text with its tokens; `None` for text that came with no header."""
    body: str
    markup: str
    closed: bool
    """An end token (or the next message) ended it."""
    has_body: bool = True
    """False for a header the text ended in, before `<|message|>`."""


State = Literal["open", "header", "body"]


@dataclass(kw_only=True, slots=True)
class _Splitter:
    """Cuts a reply into messages; `state` tells what the text ended in."""

    text: str
    state: State = "open"
    header: str | None = None
    segment: int = 0
    mark: int = 0
    position: int = 0
    """Where the next token is looked for."""

    def run(self) -> list[_Message]:
        """The messages that end at the tokens from `position` on."""
        messages: list[_Message] = []
        while (found := find_first(self.text, TOKENS, self.position)) is not None:
            index, token = found
            self.position = index + len(token)
            message = self._step(index, token, self.position)
            if message is not None:
                messages.append(message)
        return messages

    def _step(self, index: int, token: str, after: int) -> _Message | None:
        before: _Message | None = None
        if self.state == "open" and token in (CHANNEL, CONSTRAIN, MESSAGE):
            text = self.text[self.segment : index]
            if not _HEADER_REST.fullmatch(text):
                # Not the rest of the prompt's header: answer text, then a new header.
                before = self._headerless(text, index)
                self.segment = self.mark = index
            self.state = "header"
        if self.state == "header":
            if token == MESSAGE:
                self.header = self.text[self.segment : index]
                self.state, self.segment = "body", after
            elif token == START:
                self.segment, self.mark = after, index
            elif token in _ENDS:  # a header with no message: nothing to keep
                self.state, self.segment, self.mark = "open", after, after
            return before
        ended = token in _ENDS
        if self.state == "body" and not ended and token not in (START, CHANNEL):
            return None  # <|message|> or <|constrain|> inside a body is text
        header = self.header if self.state == "body" else None
        body = self.text[self.segment : index]
        message = _Message(
            header=header,
            body=body,
            markup=self.text[self.mark : after if ended else index],
            closed=True,
        )
        if ended:
            self.state, self.segment, self.mark = "open", after, after
        else:
            self.state, self.mark = "header", index
            self.segment = after if token == START else index
        self.header = None
        return message if header is not None or body.strip() else None

    def _headerless(self, body: str, end: int) -> _Message | None:
        if not body.strip():
            return None
        return _Message(header=None, body=body, markup=self.text[self.mark : end], closed=True)

    def tail(self) -> _Message | None:
        """What the text ended in, as a message that did not end."""
        rest = self.text[self.segment :]
        markup = self.text[self.mark :]
        if self.state == "body":
            return _Message(header=self.header, body=rest, markup=markup, closed=False)
        if self.state == "header":
            return _Message(header=rest, body="", markup=markup, closed=False, has_body=False)
        if not rest.strip():
            return None
        return _Message(header=None, body=rest, markup=markup, closed=False)


def _route(header: str) -> tuple[str | None, str | None]:
    """The recipient and the channel a header names."""
    role, *channels = header.split(CHANNEL)
    words = " ".join([role, *channels]).replace(CONSTRAIN, " ").split()
    recipient = next((w[3:] for w in reversed(words) if w.startswith("to=")), None)
    last = channels[-1].split(CONSTRAIN)[0] if channels else ""
    names = [w for w in last.split() if not w.startswith("to=")]
    return recipient, names[0] if names else None


class HarmonyFormat(TextFormat):
    """OpenAI's harmony format (gpt-oss)."""

    name = "harmony"
    markers = TOKENS
    rules = (
        f"Write each call as {START}assistant to=functions.NAME{CHANNEL}commentary "
        f"{CONSTRAIN}json{MESSAGE} followed by the arguments as a JSON object and {CALL}.",
    )

    def read_answer(self, text: str, context: ParseContext) -> Body:
        """Read every message of the reply (after any `<think>` block)."""
        splitter = _Splitter(text=text)
        messages = splitter.run()
        if (tail := splitter.tail()) is not None:
            messages.append(tail)
        body = Body()
        for message in messages:
            _read_message(message, body, context)
        body.content = ["\n\n".join(p.strip() for p in body.content if p.strip())]
        return body

    def settle(self, text: str, context: ParseContext) -> Settled:
        """Whole messages, and the body of an answer or analysis message still arriving."""
        thought, rest, quiet = settle_reasoning(
            text, self.think_tags, forced_open=context.thinking_forced_open, markers=TOKENS
        )
        if rest is None:
            return Settled(thought, "", quiet)
        splitter, body = _whole_messages(text[rest:], context)
        reasoning = [p.strip() for p in [thought, *body.reasoning] if p.strip()]
        content = [p.strip() for p in body.content if p.strip()]
        destination = _destination(splitter.header) if splitter.state == "body" else "call"
        quiet = Quiet(None, len(text), (watch(text, TOKENS),))  # until the next token
        if destination != "call":  # the body of a message still arriving
            tail = splitter.text[splitter.segment :]
            end, marked = settled_span(tail, TOKENS)
            piece = tail[:end].lstrip()
            target = reasoning if destination == "reasoning" else content
            if not marked and (piece or not target):
                since = rest + splitter.segment + end
                quiet = Quiet(destination, since, ((TOKENS, since),))
            elif not marked:
                quiet = None  # the piece, still blank, will come after a separator
            target.extend([piece] if piece else [])
        return Settled("\n\n".join(reasoning), "\n\n".join(content), quiet)

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        """Each call as a commentary message to `functions.NAME`."""
        return "".join(
            f"{START}assistant to={_FUNCTIONS}{c.name}{CHANNEL}commentary {CONSTRAIN}json"
            f"{MESSAGE}{arguments_text(c.arguments)}{CALL}"
            for c in calls
        )


def _whole_messages(text: str, context: ParseContext) -> tuple[_Splitter, Body]:
    """The reply split up to its last token, and what its whole messages hold.

    While a reply streams, the split goes on from that of the text so far: no token is
    part of another, so the tokens found before stay where they are.
    """
    saved = resume("harmony", text)
    if isinstance(saved, tuple):
        before, read = cast(tuple[_Splitter, Body], saved)
        splitter = copy.copy(before)
        splitter.text = text
        body = Body(
            content=list(read.content), reasoning=list(read.reasoning), items=list(read.items)
        )
    else:
        splitter, body = _Splitter(text=text), Body()
    for message in splitter.run():
        _read_message(message, body, context)
    save("harmony", text, (copy.copy(splitter), body))
    return splitter, body


def _destination(header: str | None) -> Literal["call", "reasoning", "content"]:
    if header is None:
        return "content"
    recipient, channel = _route(header)
    if recipient is not None and recipient not in _NOT_TOOLS:
        return "call"
    return "reasoning" if channel == "analysis" else "content"


def _read_message(message: _Message, body: Body, context: ParseContext) -> None:
    destination = _destination(message.header)
    if destination == "reasoning":
        body.reasoning.append(message.body)
    elif destination == "content":
        body.content.append(message.body)
    else:
        recipient, _ = _route(message.header or "")
        body.items.append(_call(message, recipient or "", context))


def _call(message: _Message, recipient: str, context: ParseContext) -> Item:
    name = recipient.removeprefix(_FUNCTIONS)
    if not recipient.startswith(_FUNCTIONS) and context.tool(recipient) is None:
        offered = ", ".join(f"{_FUNCTIONS}{t.name}" for t in context.tools) or "none"
        problem = (
            f"{recipient!r} is not one of the offered tools (offered: {offered}); "
            f"address calls to {_FUNCTIONS}NAME"
        )
        return MalformedCall(text=message.markup, problem=problem, name=recipient)
    if not message.has_body:
        problem = f"the call to {name!r} ends before {MESSAGE} and its arguments"
        return MalformedCall(text=message.markup, problem=problem, name=name, truncated=True)
    return named_call(name, message.body, closed=message.closed)


def could_be_header(text: str) -> bool:
    """Whether a reply that starts with `text` may still be in the rest of a header."""
    rest = text.lstrip()
    cut = rest.rfind("<")
    if cut >= 0 and any(token.startswith(rest[cut:]) for token in TOKENS):
        rest = rest[:cut].rstrip()  # a token may be arriving: is what comes before a header?
    if _ROLE.startswith(rest):
        return True
    rest = rest.removeprefix(_ROLE).lstrip() if rest.startswith(_ROLE) else rest
    return "to=".startswith(rest) or re.fullmatch(r"to=[^\s<]*\s*", rest) is not None
