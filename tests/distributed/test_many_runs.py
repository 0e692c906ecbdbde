"""100 runs at once on Temporal on one worker process, and 30 on two: all complete, nothing
is lost or duplicated (every run's events gap-free and exactly the events of a three-step
run, its conversation whole, each mutation and each model turn made once), and each of two
workers takes a share."""

import asyncio
import signal
from collections import Counter
from pathlib import Path

import pytest
from temporal_chaos import (
    Chaos,
    conversation,
    gap_free,
    ledger_agent,
    lines,
    model_turns,
    settings,
    stop,
)

from harness import Harness
from harness.core.states import RunState

THREE_STEPS = [
    "run_submitted",
    "run_started",
    *["step_started", "model_called", "model_responded", "tool_started", "tool_completed"] * 2,
    *["step_started", "model_called", "model_responded", "agent_message", "run_finished"],
]
"""The events of one run of the ledger agent that nothing interrupted."""


@pytest.mark.parametrize(("workers", "runs"), [(1, 100), (2, 30)])
async def test_many_runs_at_once_all_complete_once(
    tmp_path: Path, temporal_address: str, task_queue: str, workers: int, runs: int
) -> None:
    chaos = Chaos(home=tmp_path, backend=["temporal", temporal_address, task_queue])
    tasks = [f"task-{i}" for i in range(runs)]
    try:
        started = [chaos.start_worker() for _ in range(workers)]
        async with Harness(settings(chaos.home, chaos.backend), execute=False) as harness:
            agent = ledger_agent()
            run_ids = await asyncio.gather(*(harness.submit(agent, task) for task in tasks))
            results = await asyncio.gather(*(harness.wait(r, timeout=180) for r in run_ids))
            records = await harness.store.list_runs(limit=None)
            events = {r: list(await harness.store.events(r)) for r in run_ids}
            talks = {r: await conversation(harness, r) for r in run_ids}
        for worker in started:
            stop(worker, signal.SIGTERM)
    finally:
        chaos.reap()
    assert [r.output for r in results] == [f"done {task}: append ok" for task in tasks]
    assert len(records) == runs
    assert {r.state for r in records} == {RunState.COMPLETED}
    for run_id in run_ids:
        assert gap_free(events[run_id]), run_id
        assert [e.type for e in events[run_id]] == THREE_STEPS, run_id
        assert [role for role, *_ in talks[run_id]] == [
            *["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
        ]
    assert sorted(lines(chaos.ledger)) == sorted(tasks)  # each mutation once, none lost
    turns = model_turns(chaos)
    assert Counter((task, turn) for task, turn, _ in turns) == {
        (task, turn): 1 for task in tasks for turn in (1, 2, 3)
    }
    assert len({pid for *_, pid in turns}) == workers  # every worker took a share
