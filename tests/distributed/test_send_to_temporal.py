"""`Harness.send` refuses a run on Temporal (its inbox is not delivered there), and says of a
run that does not exist what it says on the embedded runtime."""

from pathlib import Path

import pytest
from temporal_chaos import ledger_agent, settings

from harness import Harness
from harness.errors import RunError


async def test_send_refuses_a_temporal_run_and_names_a_missing_one_as_embedded(
    tmp_path: Path, temporal_address: str, task_queue: str
) -> None:
    backend = ["temporal", temporal_address, task_queue]
    async with Harness(settings(tmp_path, backend), execute=False) as harness:
        run_id = await harness.submit(ledger_agent(), "t1")  # no worker: it stays queued
        with pytest.raises(RunError, match="not delivered to runs on Temporal"):
            await harness.send(run_id, "hello")
        with pytest.raises(RunError, match="there is no run run_nope"):
            await harness.send("run_nope", "hello")
