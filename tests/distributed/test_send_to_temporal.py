"""`Harness.send` keeps a message for a run on Temporal (its workflow reads it when told),
and says of a run that does not exist what it says on the embedded runtime."""

from pathlib import Path

import pytest
from temporal_chaos import ledger_agent, settings

from harness import Harness
from harness.errors import RunError


async def test_send_keeps_a_message_for_a_temporal_run_and_names_a_missing_one_as_embedded(
    tmp_path: Path, temporal_address: str, task_queue: str
) -> None:
    backend = ["temporal", temporal_address, task_queue]
    async with Harness(settings(tmp_path, backend), execute=False) as harness:
        run_id = await harness.submit(ledger_agent(), "t1")  # no worker: it stays queued
        message_id = await harness.send(run_id, "hello")
        [kept] = await harness.store.inbox(run_id)
        with pytest.raises(RunError, match="there is no run run_nope"):
            await harness.send("run_nope", "hello")
    assert (kept.id, kept.content, kept.sender) == (message_id, "hello", "user")
