"""`send_message` and `wait_for_message`: runs that talk to each other through their inboxes.

Both reach the run's inbox through `ToolContext.mailbox`, which the runtime hands down;
outside a `Harness` they refuse with a clear message. Both are safe to run again after a
restart: a message is sent once per call (keyed by run id and call id), and a wait's
deadline is kept durably, so a call run again waits only the time left.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated, Final

from harness.errors import ToolError
from harness.tools.context import MAX_MESSAGE_CHARS, Letter, Mailbox, ToolContext, check_content
from harness.tools.decorator import tool
from harness.tools.spec import ToolSpec

__all__ = [
    "MAX_WAIT_S",
    "SEND_MESSAGE",
    "WAIT_FOR_MESSAGE",
    "send_message_tool",
    "wait_for_message_tool",
]

SEND_MESSAGE: Final = "send_message"
WAIT_FOR_MESSAGE: Final = "wait_for_message"
MAX_WAIT_S: Final = 3600.0
"""The longest one `wait_for_message` call waits."""


def _mailbox(context: ToolContext) -> Mailbox:
    if context.mailbox is None:
        raise ToolError(
            "This run has no inbox: messages between runs need a run of a Harness.",
            hint="Do not call the message tools in this run; answer with what you have.",
        )
    return context.mailbox


async def _send_message(
    context: ToolContext,
    to: Annotated[str, "The id of the run to send to, e.g. run_abc123."],
    content: Annotated[str, "The message."],
) -> str:
    """Send a message to another run; it reads it at its next step.

    The other run sees who sent it (this run's id and agent). Its reply, if any, comes to
    this run's inbox: use wait_for_message to wait for it.
    """
    problem = check_content(content)
    if problem is not None:
        raise ToolError(
            f"Not sent: {problem}.",
            hint=f"Send a message of 1 to {MAX_MESSAGE_CHARS:,} characters; split a longer one.",
        )
    if to == context.run_id:
        raise ToolError("Not sent: that is this run's own id.", hint="Name another run's id.")
    message_id = await _mailbox(context).send(to.strip(), content, call_id=context.call_id)
    return f"Message {message_id} sent to {to}."


async def _wait_for_message(
    context: ToolContext,
    timeout_s: Annotated[float, f"Seconds to wait at most (1 to {MAX_WAIT_S:.0f})."] = 60.0,
) -> str:
    """Wait until a message arrives in this run's inbox, and read it.

    Returns every message that arrived, each naming its sender, or says that none came
    within the time given. The run holds no worker while it waits.
    """
    mailbox = _mailbox(context)
    letters = await mailbox.take(context.call_id)
    if letters:
        return _render(letters)
    wait_s = max(1.0, min(float(timeout_s), MAX_WAIT_S))
    if context.timeout_s is not None:
        wait_s = min(wait_s, context.timeout_s)
    deadline = await mailbox.deadline(context.call_id, wait_s)
    if deadline > time.time():
        letters = await context.park("message", mailbox.wait(context.call_id, deadline))
    if letters:
        return _render(letters)
    return f"No message within {wait_s:g} s."


def _render(letters: Sequence[Letter]) -> str:
    return "\n\n".join(letter.render() for letter in letters)


def send_message_tool() -> ToolSpec:
    """The `send_message` tool (to = a run id); a message is sent once per call."""
    return tool(name=SEND_MESSAGE, side_effects="idempotent")(_send_message)


def wait_for_message_tool() -> ToolSpec:
    """The `wait_for_message` tool: parks the run until a message or the timeout comes."""
    spec = tool(name=WAIT_FOR_MESSAGE, side_effects="idempotent", timeout=MAX_WAIT_S)(
        _wait_for_message
    )
    return replace(spec, grace_s=5.0)  # the wait ends itself at its timeout, then answers
