"""Summaries of a run's history, written by a model with instructions of their own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from harness.core.ids import new_id
from harness.core.messages import Message
from harness.gateway.model import Model, ModelRequest, ModelResponse, ModelSettings
from harness.memory._cut import cut_text
from harness.memory.tokens import TokenCounter

__all__ = ["STAGE_INSTRUCTIONS", "SUMMARY_INSTRUCTIONS", "request_summary", "summary_message"]

SUMMARY_INSTRUCTIONS: Final = (
    "You compress the history of an AI agent's run so that the agent can go on working "
    "within its context window. You are given the agent's task, the summary written so far "
    "(if any) and the messages that follow it. Write one updated summary that replaces them "
    "all. Keep every fact the agent will need: what it did and why, what it found (file "
    "paths, names, numbers, commands and their outcomes), errors and how they were resolved, "
    "decisions taken, and what remains open. Leave out chatter and repeated tool output. "
    "Write plain text, without any preamble, in at most {words} words."
)
STAGE_INSTRUCTIONS: Final = (
    "An AI agent's context window is nearly full. You are given its task, the summary of "
    "its work so far (if any) and every message since. Write a stage summary from which the "
    "agent will continue with nothing else in view: the goal, what has been done, what was "
    "found (file paths, names, numbers, commands and their outcomes), the results of the "
    "latest steps, what remains to do, and the very next step. Write plain text, without any "
    "preamble, in at most {words} words."
)
_MESSAGE_CHARS: Final = (4000, 2000, 1000, 500, 250, 120)
"""Longest text of one message in a transcript, tried in turn until the transcript fits;
longer texts are cut in the middle."""
_TASK_CHARS: Final = 8000


def summary_message(summary: str | None, removed: int, *, stage: bool) -> Message:
    """The message that stands for `removed` history messages in what the model sees."""
    if summary is None:
        return Message.user(
            f"[{removed} earlier messages of this run were removed to fit the context window.]"
        )
    if stage:
        header = (
            f"[Stage summary: the {removed} messages of this run so far were compacted to fit "
            "the context window. Continue the task from this summary.]"
        )
    else:
        header = (
            f"[Summary of the {removed} earlier messages of this run, compacted to fit the "
            "context window.]"
        )
    return Message.user(f"{header}\n\n{summary}")


async def request_summary(
    model: Model,
    *,
    task: str,
    previous: str | None,
    messages: Sequence[Message],
    stage: bool,
    input_budget: int,
    max_tokens: int,
    counter: TokenCounter,
) -> tuple[str, ModelResponse]:
    """Ask `model` for a summary of `messages`; the latest ones are kept if not all fit.

    Returns:
        The summary, and the response it came in (its usage, profile and prices).

    Raises:
        ValueError: The model answered without text.
    """
    words = max(50, max_tokens * 2 // 3)
    instructions = (STAGE_INSTRUCTIONS if stage else SUMMARY_INSTRUCTIONS).format(words=words)
    intro = f"The task:\n{cut_text(task, _TASK_CHARS)}\n\n"
    if previous:
        intro += f"The summary so far:\n{previous}\n\n"
    room = input_budget - counter.text_tokens(instructions) - counter.text_tokens(intro) - 64
    transcript = _transcript(messages, room, counter)
    request = ModelRequest(
        messages=(Message.system(instructions), Message.user(f"{intro}{transcript}")),
        settings=ModelSettings(max_output_tokens=max_tokens),
        request_id=new_id("req"),
    )
    response = await model.request(request)
    text = (response.message.content or "").strip()
    if not text:
        raise ValueError(f"the summarizer {model.name} answered without text")
    return _clip(text, max_tokens, counter), response


def _transcript(messages: Sequence[Message], room: int, counter: TokenCounter) -> str:
    """The messages as text in at most `room` tokens.

    Long messages are cut shorter and shorter until all fit; when even the shortest cuts
    do not, the oldest messages are left out (an earlier summary covers what came before).
    """
    blocks: list[str] = []
    costs: list[int] = []
    for limit in _MESSAGE_CHARS:
        blocks = [_render(m, limit) for m in messages]
        costs = [counter.text_tokens(b) + 1 for b in blocks]
        if sum(costs) <= room:
            return "Messages:\n\n" + "\n\n".join(blocks)
    kept = 0
    while kept < len(blocks) and costs[len(blocks) - 1 - kept] <= room:
        room -= costs[len(blocks) - 1 - kept]
        kept += 1
    omitted = f"({len(blocks) - kept} older messages omitted.)"
    return "Messages:\n\n" + "\n\n".join([omitted, *blocks[len(blocks) - kept :]])


def _render(message: Message, limit: int) -> str:
    if message.role == "tool":
        label = f"[tool result{f' of {message.name}' if message.name else ''}]"
        return f"{label}\n{cut_text(message.content or '', limit, brief=True)}"
    parts = [f"[{message.role}]"]
    if message.content:
        parts.append(cut_text(message.content, limit, brief=True))
    for call in message.tool_calls:
        arguments = cut_text(call.arguments, max(limit // 4, 120), brief=True)
        parts.append(f"called {call.name}({arguments})")
    return "\n".join(parts)


def _clip(text: str, max_tokens: int, counter: TokenCounter) -> str:
    tokens = counter.text_tokens(text)
    if tokens <= max_tokens:
        return text
    return cut_text(text, len(text) * max_tokens // tokens)
