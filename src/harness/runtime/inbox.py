"""Messages between runs: each run's durable inbox, as its loop and its tools see it.

A message is kept in the store's `inbox` table (`EventStore.post_message`), which in the
same transaction queues a `mail` control for the run's owner. The owner's control reader
(`RunExecutor`) sets the run's `RunHandle.mail` flag (`note_mail`); only then does the run read its
inbox, at its next step boundary (or in `wait_for_message`): a run without mail never
reads the store for it. A message read is handed to the `StoreSink`, which marks it
delivered in the transaction of the step that carries it into the run's history, so each
message is in that history exactly once, whichever process executes the run and however
often it is taken over (a step that never commits delivered nothing).

A run taken over or resumed reads its inbox once when it starts: the control that told
the process before may have been consumed by the one that died.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from harness.core.events import MessageReceived, MessageSent, summarize
from harness.errors import ConfigError, RunError, StoreConflict, ToolError
from harness.runtime.runs import RunHandle
from harness.runtime.sink import StoreSink
from harness.store.protocol import EventStore, InboxMessage, NewMail
from harness.tools.context import Letter, check_content

__all__ = ["RunMailbox", "post_message"]


async def post_message(
    store: EventStore,
    run_id: str,
    content: str,
    *,
    sender: str,
    sender_run: str | None = None,
    key: str | None = None,
) -> int:
    """Put a message in run `run_id`'s inbox; returns its id.

    Raises:
        ConfigError: The content is empty or too long, or the sender is empty.
        RunError: There is no such run, or it has ended.
    """
    problem = check_content(content)
    if problem is not None:
        raise ConfigError(f"cannot send to run {run_id}: {problem}")
    if not sender.strip():
        raise ConfigError(f"cannot send to run {run_id}: the sender has no name")
    mail = NewMail(run_id=run_id, content=content, sender=sender, sender_run=sender_run, key=key)
    try:
        return await store.post_message(mail)
    except StoreConflict as exc:
        raise RunError(f"cannot send to run {run_id}: {exc.message}") from exc


class RunMailbox:
    """The inbox of one run executing here: the `Mailbox` its loop and tools are handed.

    Args:
        store: Where the inbox lives.
        sink: The run's sink: messages read are delivered with its next commit, and
            `message_received` / `message_sent` are reported there.
        run_id: The run.
        agent: The run's agent, named as the sender of what the run sends.
        handle: The run's handle: its `mail` flag says when a message may have arrived.

    Every run executing here has one, most never get mail: it is slotted, and makes its
    set of messages read at the first read.
    """

    __slots__ = ("_agent", "_handle", "_run_id", "_sink", "_store", "_taken")

    def __init__(
        self, store: EventStore, sink: StoreSink, run_id: str, *, agent: str, handle: RunHandle
    ) -> None:
        self._store, self._sink, self._run_id, self._agent = store, sink, run_id, agent
        self._handle = handle
        self._taken: set[int] | None = None
        """Messages read by this execution: delivered with the next commit, never read twice."""

    @property
    def has_mail(self) -> bool:
        """Whether a message may have arrived since the inbox was last read."""
        return self._handle.mail

    async def take(self, call_id: str | None = None) -> list[Letter]:
        """The messages not delivered yet; they are delivered with the run's next commit."""
        handle = self._handle
        handle.mail = False  # one that arrives during the read sets it again
        if handle.mail_arrived is not None:
            handle.mail_arrived.clear()
        if self._taken is None:
            self._taken = set()
        taken = self._taken
        unread = [m for m in await self._store.inbox(self._run_id) if m.id not in taken]
        for message in unread:
            taken.add(message.id)
            self._sink.deliver(message.id)
            self._sink.emit(_received(message, call_id))
        return [_letter(m) for m in unread]

    async def wait(self, call_id: str, deadline: float) -> list[Letter]:
        """The messages as soon as some arrive, or `[]` at `deadline` (epoch seconds)."""
        handle = self._handle
        arrived = handle.mail_arrived = handle.mail_arrived or asyncio.Event()
        if handle.mail:
            arrived.set()
        while (left := deadline - time.time()) > 0:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await arrived.wait()
            if handle.mail and (letters := await self.take(call_id)):
                return letters
        return []

    async def deadline(self, call_id: str, timeout_s: float) -> float:
        """When the wait of `call_id` ends: kept with the run at its first run."""
        key = f"wait_deadline:{call_id}"
        kept = self._sink.pending_blob(key) or await self._store.get_blob(self._run_id, key)
        if kept is not None:
            return float(kept)
        deadline = time.time() + timeout_s
        self._sink.blob(key, repr(deadline))  # commits as the call parks
        return deadline

    async def send(self, to: str, content: str, *, call_id: str) -> int:
        """Send a message to run `to` once per call (a call run again sends nothing new)."""
        try:
            message_id = await post_message(
                self._store,
                to,
                content,
                sender=self._agent,
                sender_run=self._run_id,
                key=f"{self._run_id}:{call_id}",
            )
        except (ConfigError, RunError) as exc:
            raise ToolError(
                f"Not sent: {exc}.",
                hint="Send to the id of a run that is still going (e.g. one a message came from).",
            ) from exc
        self._sink.emit(
            MessageSent(
                to_run=to, message_id=message_id, call_id=call_id, content=summarize(content)
            )
        )
        return message_id


def _received(message: InboxMessage, call_id: str | None) -> MessageReceived:
    return MessageReceived(
        message_id=message.id,
        sender=message.sender,
        sender_run=message.sender_run,
        call_id=call_id,
        content=summarize(message.content),
    )


def _letter(message: InboxMessage) -> Letter:
    return Letter(
        id=message.id,
        sender=message.sender,
        sender_run=message.sender_run,
        content=message.content,
    )
