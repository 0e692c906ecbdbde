"""The store's part of messages between runs: the inbox, its `mail` controls, delivery."""

from __future__ import annotations

import asyncio

import pytest

from harness.core import Message, RunState
from harness.store import (
    EventStore,
    InboxMessage,
    NewMail,
    NewRun,
    RunUpdate,
    StepWrite,
    StoreConflict,
    open_store,
)

from .conftest import START, FakeClock


async def test_a_message_is_kept_and_its_run_owner_is_told(
    store: EventStore, clock: FakeClock
) -> None:
    await store.create_run(NewRun(run_id="run_1", agent="ops"))
    await store.claim("w1", lease_s=60)
    first = await store.post_message(NewMail(run_id="run_1", content="hello"))
    clock.advance(1)
    second = await store.post_message(
        NewMail(run_id="run_1", content="from a run", sender="coder", sender_run="run_0")
    )
    assert second > first
    assert await store.inbox("run_1") == [
        InboxMessage(
            id=first, run_id="run_1", content="hello", sender="user", sender_run=None, sent_at=START
        ),
        InboxMessage(
            id=second,
            run_id="run_1",
            content="from a run",
            sender="coder",
            sender_run="run_0",
            sent_at=START + 1,
        ),
    ]
    taken = await store.take_controls(owner="w1")
    assert [(c.kind, dict(c.payload)) for c in taken] == [
        ("mail", {"message_id": first}),
        ("mail", {"message_id": second}),
    ]


async def test_a_message_is_delivered_with_its_step_and_only_once(
    store: EventStore, clock: FakeClock
) -> None:
    await store.create_run(NewRun(run_id="run_1", agent="ops"))
    message_id = await store.post_message(NewMail(run_id="run_1", content="hello"))
    clock.advance(2)
    await store.append(
        StepWrite(
            run_id="run_1",
            messages=[Message.user("[message from user]: hello")],
            delivered=[message_id],
        )
    )
    assert await store.inbox("run_1") == []
    (kept,) = await store.inbox("run_1", unread=False)
    assert kept.delivered_at == START + 2
    # A second delivery fails the whole step: nothing of it is written.
    with pytest.raises(StoreConflict, match="delivered already"):
        await store.append(
            StepWrite(run_id="run_1", messages=[Message.user("again")], delivered=[message_id])
        )
    assert [m.content for m in await store.messages("run_1")] == ["[message from user]: hello"]


async def test_a_message_of_another_run_cannot_be_delivered(store: EventStore) -> None:
    await store.create_run(NewRun(run_id="run_1", agent="ops"))
    await store.create_run(NewRun(run_id="run_2", agent="ops"))
    message_id = await store.post_message(NewMail(run_id="run_2", content="for two"))
    with pytest.raises(StoreConflict, match="not its own"):
        await store.append(StepWrite(run_id="run_1", delivered=[message_id]))
    assert [m.id for m in await store.inbox("run_2")] == [message_id]


async def test_a_key_keeps_one_message_per_sending_call(store: EventStore) -> None:
    await store.create_run(NewRun(run_id="run_1", agent="ops"))
    mail = NewMail(
        run_id="run_1", content="once", sender="coder", sender_run="run_0", key="run_0:c1"
    )
    first = await store.post_message(mail)
    assert await store.post_message(mail) == first
    assert len(await store.inbox("run_1")) == 1
    assert len(await store.take_controls(run_id="run_1")) == 1


async def test_messages_need_a_run_that_has_not_ended(store: EventStore) -> None:
    with pytest.raises(StoreConflict, match="there is no run run_x"):
        await store.post_message(NewMail(run_id="run_x", content="hi"))
    await store.create_run(NewRun(run_id="run_1", agent="ops", state=RunState.RUNNING))
    await store.append(StepWrite(run_id="run_1", update=RunUpdate(state=RunState.COMPLETED)))
    with pytest.raises(StoreConflict, match="run run_1 is COMPLETED: a finished run"):
        await store.post_message(NewMail(run_id="run_1", content="hi"))
    assert await store.inbox("run_1", unread=False) == []


async def test_racing_deliveries_from_two_stores_deliver_each_message_once(
    target: str, clock: FakeClock
) -> None:
    async with (
        await open_store(target, clock=clock) as one,
        await open_store(target, clock=clock) as two,
    ):
        await one.create_run(NewRun(run_id="run_1", agent="ops"))
        ids = [await one.post_message(NewMail(run_id="run_1", content=f"m{i}")) for i in range(10)]

        async def deliver(store: EventStore, message_id: int) -> bool:
            try:
                await store.append(
                    StepWrite(
                        run_id="run_1",
                        messages=[Message.user(str(message_id))],
                        delivered=[message_id],
                    )
                )
            except StoreConflict:
                return False
            return True

        won = await asyncio.gather(*(deliver(s, i) for i in ids for s in (one, two)))
        assert sum(won) == len(ids)
        history = [m.content for m in await one.messages("run_1")]
        assert sorted(history, key=int) == [str(i) for i in ids]


async def test_the_runs_with_mail_are_those_with_a_message_not_delivered(
    store: EventStore,
) -> None:
    for run_id in ("run_1", "run_2", "run_3"):
        await store.create_run(NewRun(run_id=run_id, agent="ops"))
    await store.post_message(NewMail(run_id="run_1", content="unread"))
    read = await store.post_message(NewMail(run_id="run_2", content="read"))
    await store.append(StepWrite(run_id="run_2", messages=[Message.user("read")], delivered=[read]))
    await store.post_message(NewMail(run_id="run_1", content="unread too"))
    # more ids than one statement takes
    asked = ["run_1", "run_2", "run_3", "missing", *(f"run_{n:04}" for n in range(1200))]
    assert await store.runs_with_mail(asked) == {"run_1"}
    assert await store.runs_with_mail([]) == set()
    await store.post_message(NewMail(run_id="run_2", content="new"))
    assert await store.runs_with_mail(["run_2", "run_3"]) == {"run_2"}
