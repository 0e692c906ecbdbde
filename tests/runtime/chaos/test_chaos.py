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

from harness import Harness
from harness.runtime import Settings

sys.path.insert(0, str(Path(__file__).parent))
from chaos_agent import chaos_agent

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


def stop(worker: subprocess.Popen[str], how: signal.Signals) -> None:
    worker.send_signal(how)
    worker.wait()
    assert worker.stdout is not None
    worker.stdout.close()


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
        recovered = 0
        for run_id in run_ids:
            events = [e async for e in harness.events(run_id)]
            assert [e.seq for e in events] == list(range(1, len(events) + 1)), run_id
            recovered += sum(e.type == "run_recovered" for e in events)
            stored = await harness.messages(run_id)
            check_history(stored)
    assert all(r.termination == "final_answer" for r in results), Counter(
        r.termination for r in results
    )
    assert {r.output for r in results} == {f"done task-{i}" for i in range(runs)}
    lines = Counter(log.read_text().splitlines())
    assert max(lines.values()) == 1, [t for t, n in lines.items() if n > 1]
    assert recovered > 0, "the kills should have interrupted some runs"


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
