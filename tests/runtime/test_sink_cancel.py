"""A run cancelled while its step is being committed: the step is written once, not twice.

The store's batches refuse a cancel (other writers wait on them), so a cancel that reaches a
run's task while its write is in flight arrives after that write committed. The run's
cancellation then commits `run_cancelled`; it must not commit the step's events again.
"""

from __future__ import annotations

import asyncio

import pytest

from harness.core import Message, RunState
from harness.core.events import RunCancelled, StepStarted, ToolStarted
from harness.runtime.bus import EventBus
from harness.runtime.sink import StoreSink
from harness.store import NewRun, RunUpdate, open_store


async def test_a_cancel_during_a_commit_writes_the_step_once(store_target: str) -> None:
    store = await open_store(store_target)
    try:
        await store.create_run(
            NewRun(run_id="run_c", agent="ops", state=RunState.RUNNING, owner="w", lease_s=60)
        )
        sink = StoreSink(store, EventBus(), "run_c", owner="w", pause_requested=lambda: False)
        sink.emit(StepStarted(step=1))
        sink.emit(ToolStarted(step=1, call_id="c1", tool="deploy", arguments="{}"))
        sink.message(Message.user("go on"))
        committing = asyncio.ensure_future(sink.flush())
        await asyncio.sleep(0)  # the flush is in the store's hands, waiting for its commit
        committing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await committing
        sink.emit(RunCancelled(by="user:ann", reason="stop"))
        await sink.flush(RunUpdate(state=RunState.CANCELLED))
        events = await store.events("run_c")
        messages = await store.messages("run_c")
    finally:
        await store.close()
    assert [e.type for e in events] == ["step_started", "tool_started", "run_cancelled"]
    assert [e.seq for e in events] == [1, 2, 3]
    assert [m.content for m in messages] == ["go on"]
