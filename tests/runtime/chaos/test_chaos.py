"""Chaos: SIGKILL the worker at random moments; nothing is lost, nothing runs twice.

On SQLite and on PostgreSQL; the PostgreSQL round is smaller, to keep CI's time in bounds.
"""

import asyncio
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from harness import Harness, Message
from harness.agent.loop import UNKNOWN_OUTCOME
from harness.core import RunEvent
from harness.core.events import (
    ModelResponded,
    RunRecovered,
    RunSubmitted,
    ToolCompleted,
    payloads,
    summarize,
)
from harness.runtime import Settings

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "processes"))
from chaos_agent import chaos_agent
from worker_process import stop

SIZES = {"sqlite": (200, 4), "postgres": (120, 4)}
"""Runs and kills per store."""


def start_worker(home: Path, log: Path, store: str) -> subprocess.Popen[str]:
    env = {**os.environ, "CHAOS_LOG": str(log), "HARNESS_STORE": store}
    worker = subprocess.Popen(
        [sys.executable, str(Path(__file__).parent / "worker.py"), str(home)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None
    assert worker.stdout.readline().strip() == "ready"
    return worker


async def test_killed_workers_lose_nothing_and_repeat_no_mutation(
    tmp_path: Path, store_target: str
) -> None:
    log = tmp_path / "mutations.log"
    settings = Settings(home=tmp_path)
    rng = random.Random(20261130)
    runs, kills = SIZES["postgres" if store_target.startswith("postgresql:") else "sqlite"]
    async with Harness(settings, store=store_target, execute=False, max_queue=runs) as harness:
        run_ids = [await harness.submit(chaos_agent(), f"task-{i}") for i in range(runs)]
        for _ in range(kills):
            worker = start_worker(tmp_path, log, store_target)
            await asyncio.sleep(rng.uniform(0.2, 1.2))
            stop(worker, signal.SIGKILL)
        worker = start_worker(tmp_path, log, store_target)
        try:
            results = [await harness.wait(run_id, timeout=120) for run_id in run_ids]
        finally:
            stop(worker, signal.SIGTERM)
        recovered = unknown = 0
        for run_id in run_ids:
            events = [e async for e in harness.events(run_id)]
            assert [e.seq for e in events] == list(range(1, len(events) + 1)), run_id
            recovered += sum(e.type == "run_recovered" for e in events)
            replayed = await harness.messages(run_id)  # what `harness replay` shows
            check_history(replayed)
            assert outline(replayed[1:]) == from_events(events), run_id
            unknown += sum(
                m.role == "tool" and m.name == "append_line" and m.content == UNKNOWN_OUTCOME
                for m in replayed
            )
    assert all(r.termination == "final_answer" for r in results), Counter(
        r.termination for r in results
    )
    assert {r.output for r in results} == {f"done task-{i}" for i in range(runs)}
    lines = Counter(log.read_text().splitlines())
    assert max(lines.values()) == 1, [t for t, n in lines.items() if n > 1]
    assert recovered > 0, "the kills should have interrupted some runs"
    assert unknown > 0, "no kill left a mutating call's outcome unknown"


Step = tuple[str, str, tuple[str, ...]]
"""A message in outline: role, summarized text, the call ids it makes or answers."""


def outline(messages: list[Message]) -> list[Step]:
    return [
        (
            m.role,
            summarize(m.content),
            tuple(c.id for c in m.tool_calls) or ((m.tool_call_id,) if m.tool_call_id else ()),
        )
        for m in messages
    ]


def from_events(events: list[RunEvent]) -> list[Step]:
    """The conversation rebuilt from the run's events alone (not from its messages).

    The task, each model answer and each tool result are in the events; a call of a
    mutating tool that was started but whose result no event records, when the run was
    taken over, must have been answered with the "outcome unknown" message.
    """
    (submitted,) = payloads(events[:1], RunSubmitted)
    rebuilt: list[Step] = [("user", summarize(submitted.task), ())]
    open_calls: dict[str, str] = {}
    for event in events:
        match event.payload:
            case ModelResponded(tool_calls=tool_calls, content=content):
                calls = {c.id: c.name for c in tool_calls}
                rebuilt.append(("assistant", content, tuple(calls)))
                open_calls = dict(calls)
            case ToolCompleted(call_id=call_id, result=result) if call_id in open_calls:
                del open_calls[call_id]
                rebuilt.append(("tool", result, (call_id,)))
            case RunRecovered():
                for call_id in [c for c, name in open_calls.items() if name == "append_line"]:
                    del open_calls[call_id]
                    rebuilt.append(("tool", summarize(UNKNOWN_OUTCOME), (call_id,)))
            case _:
                pass
    return rebuilt


def check_history(messages: list) -> None:  # type: ignore[type-arg]
    """Every tool message answers a call of the assistant message before it, exactly once."""
    open_calls: set[str] = set()
    answered: Counter[str] = Counter()
    for message in messages:
        if message.role == "assistant":
            assert not open_calls, "a new assistant turn before all calls were answered"
            open_calls = {c.id for c in message.tool_calls}
        elif message.role == "tool":
            assert message.tool_call_id in open_calls
            open_calls.discard(message.tool_call_id)
            answered[message.tool_call_id] += 1
    assert not open_calls
    assert all(n == 1 for n in answered.values())
