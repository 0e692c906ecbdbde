"""`WorkflowMailbox`: a run's inbox on Temporal (messages between runs, `Harness.send`).

The inbox is the store's, as embedded: `Harness.send` and the `send_message` tool keep a
message there (`post_message`), then signal the run's workflow `mail`. Only a workflow
told so (or one whose inbox held messages when it loaded) reads its inbox, at its next step
boundary or in `wait_for_message`, through the `harness.inbox` local activity; a message
read is delivered with the batch that carries it into the run's history (`StepWrite.
delivered`: the store marks it in that batch's transaction), so it is in that history
once. `wait_for_message` waits on a workflow condition with the call's deadline (a
workflow timer), no activity held; the step is written before it waits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from temporalio import workflow

from harness.core.events import MessageReceived, MessageSent, summarize
from harness.errors import RunInterrupted, ToolError
from harness.tools.builtin.messages import (
    MAX_WAIT_S,
    WAIT_FOR_MESSAGE,
    send_message_tool,
    wait_for_message_tool,
)
from harness.tools.context import Letter, ToolContext
from harness.tools.spec import ToolSpec

from ._local import store_call

if TYPE_CHECKING:
    from ._sink import WorkflowSink

__all__ = ["INBOX", "SEND", "WorkflowMailbox", "inbox_tool"]

INBOX: Final = "harness.inbox"
SEND: Final = "harness.send"

"""Reads, and a send keyed by the call (sent once however often it is tried)."""


def inbox_tool(name: str) -> ToolSpec:
    """The message tool `name` as the workflow runs it.

    `send_message` as it is; `wait_for_message` timed by the workflow's clock (the same on
    every replay).
    """
    if name == WAIT_FOR_MESSAGE:
        return replace(wait_for_message_tool(), function=_wait_for_message)
    return send_message_tool()


async def _wait_for_message(context: ToolContext, timeout_s: float = 60.0) -> str:
    """`wait_for_message` of `harness.tools.builtin.messages`, on the workflow's clock."""
    mailbox = context.mailbox
    if mailbox is None:  # pragma: no cover - every workflow's run has an inbox
        raise ToolError("This run has no inbox.")
    letters = await mailbox.take(context.call_id)
    if not letters:
        wait_s = max(1.0, min(float(timeout_s), MAX_WAIT_S))
        if context.timeout_s is not None:
            wait_s = min(wait_s, context.timeout_s)
        deadline = await mailbox.deadline(context.call_id, wait_s)
        if deadline > workflow.now().timestamp():
            letters = await context.park("message", mailbox.wait(context.call_id, deadline))
        if not letters:
            return f"No message within {wait_s:g} s."
    return "\n\n".join(letter.render() for letter in letters)


class WorkflowMailbox:
    """The `Mailbox` of one run's workflow.

    Args:
        run_id: The run.
        sink: The run's sink: messages read are delivered with its next batch.
        agent: The run's agent now (the sender of what it sends).
        mail: Whether a message may have arrived (the `mail` signal sets it).
        seen: Clears that flag before the inbox is read.
        paused: Whether a wait ends because the run pauses (asked while it waits).
    """

    def __init__(
        self,
        run_id: str,
        *,
        sink: WorkflowSink,
        agent: Callable[[], str],
        mail: Callable[[], bool],
        seen: Callable[[], None],
        paused: Callable[[], bool],
    ) -> None:
        self._run_id, self._sink, self._agent = run_id, sink, agent
        self._mail, self._seen, self._paused = mail, seen, paused
        self._taken: set[int] = set()
        self._deadlines: dict[str, float] = {}

    @property
    def has_mail(self) -> bool:
        """Whether a message may have arrived since the inbox was last read."""
        return self._mail()

    async def take(self, call_id: str | None = None) -> list[Letter]:
        """The messages not delivered yet; they are delivered with the next batch."""
        self._seen()
        unread: list[dict[str, Any]] = await store_call(INBOX, {"run_id": self._run_id})
        letters: list[Letter] = []
        for m in unread:
            if m["id"] in self._taken:
                continue
            self._taken.add(int(m["id"]))
            self._sink.deliver(int(m["id"]))
            self._sink.emit(
                MessageReceived(
                    message_id=int(m["id"]),
                    sender=str(m["sender"]),
                    sender_run=m.get("sender_run"),
                    call_id=call_id,
                    content=summarize(str(m["content"])),
                )
            )
            letters.append(
                Letter(
                    id=int(m["id"]),
                    sender=str(m["sender"]),
                    sender_run=m.get("sender_run"),
                    content=str(m["content"]),
                )
            )
        return letters

    async def wait(self, call_id: str, deadline: float) -> list[Letter]:
        """The messages as soon as some arrive, or `[]` at `deadline` (a workflow timer)."""
        await self._sink.flush()  # the call and its wait on record first
        while (left := deadline - workflow.now().timestamp()) > 0:
            with contextlib.suppress(TimeoutError):
                await workflow.wait_condition(lambda: self._mail() or self._paused(), timeout=left)
            if self._paused():  # the call runs again on resume, with the same deadline
                raise RunInterrupted(f"run {self._run_id} paused while a tool call waited")
            if self._mail() and (letters := await self.take(call_id)):
                return letters
        return []

    async def deadline(self, call_id: str, timeout_s: float) -> float:
        """When the wait of `call_id` ends: fixed at its first try in this workflow."""
        deadline = self._deadlines.get(call_id)
        if deadline is None:
            deadline = self._deadlines[call_id] = workflow.now().timestamp() + timeout_s
            self._sink.blob(f"wait_deadline:{call_id}", repr(deadline))
        return deadline

    async def send(self, to: str, content: str, *, call_id: str) -> int:
        """Send a message to run `to` once per call, and tell its workflow (`mail`)."""
        sent: dict[str, Any] = await store_call(
            SEND,
            {
                "run_id": self._run_id,
                "agent": self._agent(),
                "to": to,
                "content": content,
                "call_id": call_id,
            },
        )
        if "error" in sent:
            raise ToolError(str(sent["error"]), hint=sent.get("hint"))
        message_id = int(sent["message_id"])
        if sent.get("engine") == "temporal":
            with contextlib.suppress(Exception):  # it ended meanwhile: nothing to tell
                await workflow.get_external_workflow_handle(to).signal("mail")
        self._sink.emit(
            MessageSent(
                to_run=to, message_id=message_id, call_id=call_id, content=summarize(content)
            )
        )
        return message_id
