"""SIGKILL the Temporal worker in a mutating tool call, or in a model call, and restart it.

The run completes; the mutating call ran once and, its outcome unknown, the model was told
so (UNKNOWN_OUTCOME) instead of the call running again; a model call is simply made again;
the run's events are gap-free; and everything (answer, termination, the conversation the
model saw, the ledgers) is what the embedded runtime gives for the same run killed at the
same point.
"""

import asyncio
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporal_chaos import (
    Chaos,
    Turn,
    asking_agent,
    conversation,
    each_once,
    gap_free,
    ledger_agent,
    lines,
    model_turns,
    settings,
    stop,
    until_line,
)

from harness import Harness
from harness.agent.loop import UNKNOWN_OUTCOME
from harness.core.states import RunState

TASK = "t1"


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    """What a killed run ended with, comparable across backends."""

    output: str | None
    termination: str | None
    conversation: list[Turn]
    mutations: list[str]
    model_turns: list[tuple[str, int]]
    event_types: list[str]


async def kill_and_restart(chaos: Chaos, hold: str, reached: tuple[Path, str]) -> Outcome:
    """Run the ledger agent, SIGKILL its worker once `hold` holds it, restart, finish."""
    chaos.hold(hold)
    async with Harness(settings(chaos.home, chaos.backend), execute=False) as harness:
        try:
            worker = chaos.start_worker()
            run_id = await harness.submit(ledger_agent(), TASK)
            await until_line(*reached)
            stop(worker, signal.SIGKILL)
            before = list(await harness.store.events(run_id))
            chaos.release(hold)
            worker = chaos.start_worker()
            result = await harness.wait(run_id, timeout=60)
            stop(worker, signal.SIGTERM)
        finally:
            chaos.reap()
        events = list(await harness.store.events(run_id))
        talk = await conversation(harness, run_id)
    assert gap_free(events), [(e.seq, e.type) for e in events]
    assert events[: len(before)] == before  # what was durable at the kill stayed as it was
    if hold == "hold-tool":  # the step was durable before the mutating call ran
        assert any(e.type == "tool_started" for e in before), [e.type for e in before]
    assert each_once(chaos.ledger)
    return Outcome(
        output=result.output,
        termination=result.termination,
        conversation=talk,
        mutations=lines(chaos.ledger),
        model_turns=[(task, turn) for task, turn, _ in model_turns(chaos)],
        event_types=[e.type for e in events],
    )


HEARTBEAT_S = "1"
"""The heartbeat timeout of the runs' calls: how soon a dead worker's call is given up."""


def both(tmp_path: Path, temporal_address: str, task_queue: str) -> tuple[Chaos, Chaos]:
    """The same chaos test on Temporal and on the embedded runtime, in their own homes."""
    temporal = Chaos(home=tmp_path / "temporal", backend=["temporal", temporal_address, task_queue])
    embedded = Chaos(home=tmp_path / "embedded", backend=["embedded"])
    for chaos in (temporal, embedded):
        chaos.home.mkdir()
    return temporal, embedded


async def test_a_worker_killed_in_a_mutating_call_never_runs_it_twice(
    tmp_path: Path, temporal_address: str, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_TEMPORAL_HEARTBEAT_S", HEARTBEAT_S)
    temporal, embedded = both(tmp_path, temporal_address, task_queue)
    outcome = await kill_and_restart(temporal, "hold-tool", (temporal.ledger, TASK))
    assert outcome.mutations == [TASK]
    assert outcome.output == f"done {TASK}: append unknown"
    assert outcome.termination == "final_answer"
    assert ("tool", UNKNOWN_OUTCOME, (), f"{TASK}-append") in outcome.conversation
    assert outcome.event_types.count("tool_started") == 2  # append_line once, count_lines once
    same = await kill_and_restart(embedded, "hold-tool", (embedded.ledger, TASK))
    # The crash is on record on both: a takeover embedded, the call's lost worker on Temporal.
    assert outcome.event_types.count("run_recovered") == same.event_types.count("run_recovered")
    assert outcome.event_types.count("run_recovered") == 1
    assert (outcome.output, outcome.termination) == (same.output, same.termination)
    assert outcome.conversation == same.conversation
    assert (outcome.mutations, outcome.model_turns) == (same.mutations, same.model_turns)


async def test_a_worker_killed_in_a_model_call_makes_the_call_again(
    tmp_path: Path, temporal_address: str, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_TEMPORAL_HEARTBEAT_S", HEARTBEAT_S)
    temporal, embedded = both(tmp_path, temporal_address, task_queue)
    turn = (temporal.model_ledger, f"{TASK} 2")
    outcome = await kill_and_restart(temporal, "hold-model-2", turn)
    assert outcome.mutations == [TASK]
    assert outcome.model_turns == [(TASK, 1), (TASK, 2), (TASK, 2), (TASK, 3)]
    assert outcome.output == f"done {TASK}: append ok"
    assert outcome.event_types.count("model_responded") == 3
    same = await kill_and_restart(embedded, "hold-model-2", (embedded.model_ledger, f"{TASK} 2"))
    assert outcome.event_types.count("run_recovered") == same.event_types.count("run_recovered")
    assert outcome.event_types.count("run_recovered") == 1  # the call made again says so
    assert (outcome.output, outcome.termination) == (same.output, same.termination)
    assert outcome.conversation == same.conversation
    assert (outcome.mutations, outcome.model_turns) == (same.mutations, same.model_turns)


async def state_is(harness: Harness, run_id: str, state: RunState) -> None:
    async with asyncio.timeout(60):
        while (await harness.get(run_id)).state != state:
            await asyncio.sleep(0.05)


async def test_a_run_waiting_for_approval_or_paused_outlives_its_workers(
    tmp_path: Path, temporal_address: str, task_queue: str
) -> None:
    """Kill the worker of a run waiting for approval, pause it through the next one, kill
    that one too; a third worker resumes it, asks again, and runs the approved call once."""
    chaos = Chaos(home=tmp_path, backend=["temporal", temporal_address, task_queue])
    async with Harness(settings(chaos.home, chaos.backend), execute=False) as harness:
        try:
            worker = chaos.start_worker()
            run_id = await harness.submit(asking_agent(), TASK)
            await state_is(harness, run_id, RunState.WAITING_TOOL)
            stop(worker, signal.SIGKILL)
            worker = chaos.start_worker()
            await harness.pause(run_id)  # the new worker replays the run, then pauses it
            await state_is(harness, run_id, RunState.PAUSED)
            stop(worker, signal.SIGKILL)
            worker = chaos.start_worker()
            await harness.resume(run_id)
            async with asyncio.timeout(60):  # asked again (a decision before that is loaded)
                while [e.type for e in await harness.store.events(run_id)].count(
                    "approval_requested"
                ) < 2:
                    await asyncio.sleep(0.05)
            (asked,) = await harness.pending_approvals(run_id)
            await harness.approve(run_id, asked["call_id"], by="user:test")
            result = await harness.wait(run_id, timeout=60)
            stop(worker, signal.SIGTERM)
        finally:
            chaos.reap()
        events = list(await harness.store.events(run_id))
    assert result.output == f"done {TASK}: append ok"
    assert lines(chaos.ledger) == [TASK]
    assert gap_free(events), [(e.seq, e.type) for e in events]
    types = [e.type for e in events]
    assert types.count("approval_requested") == 2, types  # asked again after the pause
    assert types.count("approval_decided") == 1
    assert types.index("run_paused") < types.index("run_resumed") < types.index("run_finished")
