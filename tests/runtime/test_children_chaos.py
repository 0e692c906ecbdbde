"""SIGKILL the worker in the middle of fan-outs of 10 child runs, again and again.

After the takeovers: every child's mutating call ran at most once (exactly once unless a
kill left its outcome unknown, which the child was then told), every parent has exactly
its 10 children and received all 10 results, and the usage rolls up exactly, each token
counted once. On SQLite and on PostgreSQL.
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
from harness.agent.loop import UNKNOWN_OUTCOME
from harness.core.events import ChildStarted, ModelResponded, payloads
from harness.core.states import RunState
from harness.core.usage import Usage
from harness.observability.cost import read_cost
from harness.runtime import Settings
from harness.runtime.children import child_run_id

sys.path.insert(0, str(Path(__file__).parent / "processes"))
from tree_agents import FAN_OUT, researcher, supervisor
from worker_process import stop

ROOTS = 3
KILLS = 4
WORKER = Path(__file__).parent / "processes" / "tree_worker.py"


def start_worker(home: Path, ledger: Path, store: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "CHILD_LEDGER": str(ledger),
        "CHILD_LATENCY_S": "0.3",
        "HARNESS_STORE": store,
    }
    worker = subprocess.Popen(
        [sys.executable, str(WORKER), str(home)], env=env, stdout=subprocess.PIPE, text=True
    )
    assert worker.stdout is not None
    assert worker.stdout.readline().strip() == "ready"
    return worker


def lines(ledger: Path) -> list[str]:
    return ledger.read_text().splitlines() if ledger.exists() else []


async def until_ledger_grows(ledger: Path, by: int) -> None:
    """Wait until `by` more children recorded their task: a fan-out is under way."""
    start = len(lines(ledger))
    async with asyncio.timeout(60):
        while len(lines(ledger)) < start + by:
            await asyncio.sleep(0.01)


async def test_killed_workers_run_no_child_twice_and_lose_no_result(
    tmp_path: Path, store_target: str
) -> None:
    ledger = tmp_path / "ledger"
    rng = random.Random(20261201)
    settings = Settings(home=tmp_path)
    helper = researcher()
    boss = supervisor(helper)
    async with Harness(settings, store=store_target, execute=False, agents=(helper,)) as h:
        roots = [await h.submit(boss, f"root-{i}") for i in range(ROOTS)]
        for kill in range(KILLS):
            worker = start_worker(tmp_path, ledger, store_target)
            if kill == 0:  # a child is in its mutating call: its parent waits, mid fan-out
                await until_ledger_grows(ledger, by=1)
            else:  # anywhere: a takeover, a fan-out, children's replies, a parent's answer
                await asyncio.sleep(rng.uniform(0.3, 1.5))
            stop(worker, signal.SIGKILL)
        worker = start_worker(tmp_path, ledger, store_target)
        try:
            results = [await h.wait(run_id, timeout=180) for run_id in roots]
        finally:
            stop(worker, signal.SIGTERM)
        parents = [await h.get(run_id) for run_id in roots]
        trees = {r: await h.store.list_runs(root_run_id=r, limit=None) for r in roots}
        everything = [*parents, *(c for tree in trees.values() for c in tree)]
        events = await h.store.events_of_runs([r.run_id for r in everything])
        unknown = {
            child.run_id
            for tree in trees.values()
            for child in tree
            if any(
                m.role == "tool" and m.content == UNKNOWN_OUTCOME
                for m in await h.messages(child.run_id)
            )
        }
        report = await read_cost(h.store)

    # Every parent got all of its children's results, from exactly its own 10 children.
    for root, result in zip(roots, results, strict=True):
        assert result.termination == "final_answer"
        assert result.output == " | ".join(
            f"found {root_task(root, roots)}/topic-{i}" for i in range(FAN_OUT)
        )
        assert sorted(c.run_id for c in trees[root]) == sorted(
            child_run_id(root, f"fan-{i}") for i in range(FAN_OUT)
        )
        assert {c.state for c in trees[root]} == {RunState.COMPLETED}
    # The takeovers re-ran agent-tool calls: they found their children, started none anew.
    again = [p for p in payloads(events, ChildStarted) if p.existed]
    assert again, "no kill interrupted a parent while it waited for its children"
    assert any(e.type == "run_recovered" for e in events)
    # No mutation twice; exactly once where the child was not told the outcome is unknown.
    counted = Counter(lines(ledger))
    assert max(counted.values()) == 1, [t for t, n in counted.items() if n > 1]
    for root in roots:
        for i, child in enumerate(sorted(trees[root], key=lambda c: c.task or "")):
            if child.run_id not in unknown:
                assert counted[child.task or ""] == 1, (child.run_id, i)
    # Usage: each run's own is what its recorded replies cost; a parent's children's is
    # their totals; the cost report counts each token once.
    replies: dict[str, Usage] = {}
    for event in events:
        if isinstance(event.payload, ModelResponded):
            replies[event.run_id] = replies.get(event.run_id, Usage()) + event.payload.usage
    for run in everything:
        assert run.usage.cost_usd == replies[run.run_id].cost_usd, run.run_id
    for parent in parents:
        assert parent.children_usage.cost_usd == sum(c.usage.cost_usd for c in trees[parent.run_id])
    assert report.total.usd == sum(p.total_usage.cost_usd for p in parents)


def root_task(run_id: str, roots: list[str]) -> str:
    return f"root-{roots.index(run_id)}"
