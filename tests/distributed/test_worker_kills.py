"""SIGKILL the Temporal worker in a mutating tool call, or in a model call, and restart it.

The run completes; the mutating call ran once and, its outcome unknown, the model was told
so (UNKNOWN_OUTCOME) instead of the call running again; a model call is simply made again;
the run's events are gap-free; and everything (answer, termination, the conversation the
model saw, the ledgers) is what the embedded runtime gives for the same run killed at the
same point.
"""

import signal
from dataclasses import dataclass
from pathlib import Path

from temporal_chaos import (
    Chaos,
    Turn,
    conversation,
    each_once,
    gap_free,
    ledger_agent,
    lines,
    settings,
    stop,
    until_line,
)

from harness import Harness
from harness.agent.loop import UNKNOWN_OUTCOME

TASK = "t1"


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    """What a killed run ended with, comparable across backends."""

    output: str | None
    termination: str | None
    conversation: list[Turn]
    mutations: list[str]
    model_turns: list[str]
    event_types: list[str]


async def kill_and_restart(chaos: Chaos, hold: str, reached: tuple[Path, str]) -> Outcome:
    """Run the ledger agent, SIGKILL its worker once `hold` holds it, restart, finish."""
    chaos.hold(hold)
    async with Harness(settings(chaos.home, chaos.backend), execute=False) as harness:
        worker = chaos.start_worker()
        run_id = await harness.submit(ledger_agent(), TASK)
        await until_line(*reached)
        stop(worker, signal.SIGKILL)
        before = list(await harness.store.events(run_id))
        chaos.release(hold)
        worker = chaos.start_worker()
        try:
            result = await harness.wait(run_id, timeout=60)
        finally:
            stop(worker, signal.SIGTERM)
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
        model_turns=lines(chaos.model_ledger),
        event_types=[e.type for e in events],
    )


def backends(tmp_path: Path, temporal_address: str, task_queue: str) -> dict[str, Chaos]:
    return {
        "embedded": Chaos(home=tmp_path / "embedded", backend=["embedded"]),
    }


async def test_a_worker_killed_in_a_mutating_call_never_runs_it_twice(tmp_path: Path) -> None:
    chaos = Chaos(home=tmp_path / "embedded", backend=["embedded"])
    chaos.home.mkdir()
    outcome = await kill_and_restart(chaos, "hold-tool", (chaos.ledger, TASK))
    assert outcome.mutations == [TASK]
    assert outcome.output == f"done {TASK}: append unknown"
    assert outcome.termination == "final_answer"
    assert ("tool", UNKNOWN_OUTCOME, (), f"{TASK}-append") in outcome.conversation


async def test_a_worker_killed_in_a_model_call_makes_the_call_again(tmp_path: Path) -> None:
    chaos = Chaos(home=tmp_path / "embedded", backend=["embedded"])
    chaos.home.mkdir()
    outcome = await kill_and_restart(chaos, "hold-model-2", (chaos.model_ledger, f"{TASK} 2"))
    assert outcome.mutations == [TASK]
    assert outcome.model_turns == [f"{TASK} 1", f"{TASK} 2", f"{TASK} 2", f"{TASK} 3"]
    assert outcome.output == f"done {TASK}: append ok"
