"""The activities' writes: keyed batches land once, in the workflow's numbering, or fail.

The activities are called as the coroutines they are (outside a worker), on a real SQLite
store through the runtime's `TemporalHost`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from harness import Harness
from harness.core.events import RunCancelled, StepStarted
from harness.core.messages import Message
from harness.core.states import RunState
from harness.distributed.temporal._wire import event_to_dict, message_dict, update_to_dict
from harness.distributed.temporal.activities import Activities
from harness.runtime import Settings
from harness.runtime._temporal import TemporalHost
from harness.store.protocol import NewEvent, NewRun, RunUpdate


def batch(key: str, first_seq: int | None, *steps: int, **extra: Any) -> dict[str, Any]:
    return {
        "key": key,
        "first_seq": first_seq,
        "events": [event_to_dict(StepStarted(step=step), 1.0) for step in steps],
        "messages": [message_dict(Message.user(f"step {step}")) for step in steps],
        **extra,
    }


async def test_a_batch_written_again_is_written_once_and_a_misnumbered_one_fails(
    tmp_path: Path,
) -> None:
    async with Harness(Settings(home=tmp_path), execute=False) as h:
        await h.store.create_run(
            NewRun(run_id="run_t", agent="a", engine="temporal", owner="temporal", lease_s=1e9),
            events=[NewEvent(payload=RunCancelled(by=None, reason=None))],
        )
        host = TemporalHost(h.store, h._agents, h._resources, h.bus)
        record = Activities(host).record
        first = batch("w:1", 2, 1, 2)
        await record({"run_id": "run_t", "writes": [first]})
        await record({"run_id": "run_t", "writes": [first, batch("w:2", 4, 3)]})  # a retry
        events = await h.store.events("run_t")
        assert [e.seq for e in events] == [1, 2, 3, 4]
        assert len(await h.store.messages("run_t")) == 3
        with pytest.raises(ApplicationError, match="another process wrote") as failed:
            await record({"run_id": "run_t", "writes": [batch("w:3", 9, 4)]})
        assert failed.value.non_retryable  # the workflow fails loudly; the store keeps seq 5
        ended = RunUpdate(state=RunState.CANCELLED, termination="cancelled")
        expect = [RunState.PENDING, RunState.RUNNING]
        await record(
            {
                "run_id": "run_t",
                "writes": [batch("w:4", None, 5, update=update_to_dict(ended), expect=expect)],
            }
        )
        assert (await h.get("run_t")).state == RunState.CANCELLED
        # Once ended, a batch that expects it unfinished is dropped, not an error.
        await record({"run_id": "run_t", "writes": [batch("w:5", None, 6, expect=expect)]})
        assert (await h.get("run_t")).last_seq == 6
