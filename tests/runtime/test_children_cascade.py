"""Cancel, pause and resume of a parent reach its children, across processes.

A worker process executes the tree; this process, which executes nothing, steers the
parent only (as `harness cancel/pause/resume` from another terminal would). On SQLite
and on PostgreSQL.
"""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from harness import Harness
from harness.core.events import RunPaused, payloads
from harness.core.states import RunState
from harness.runtime import Settings

sys.path.insert(0, str(Path(__file__).parent / "processes"))
from tree_agents import FAN_OUT, researcher, supervisor
from worker_process import stop

WORKER = Path(__file__).parent / "processes" / "tree_worker.py"


def start_worker(home: Path, store: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "CHILD_LEDGER": str(home / "ledger"),
        "CHILD_LATENCY_S": "1.0",
        "HARNESS_STORE": store,
    }
    worker = subprocess.Popen(
        [sys.executable, str(WORKER), str(home)], env=env, stdout=subprocess.PIPE, text=True
    )
    assert worker.stdout is not None
    assert worker.stdout.readline().strip() == "ready"
    return worker


async def children_in(h: Harness, run_id: str, *states: str, count: int = FAN_OUT) -> list[str]:
    async with asyncio.timeout(60):
        while True:
            children = await h.store.list_runs(parent_run_id=run_id, limit=None)
            if len(children) == count and all(c.state in states for c in children):
                return [c.run_id for c in children]
            await asyncio.sleep(0.05)


async def state_of(h: Harness, run_id: str, *states: str) -> None:
    async with asyncio.timeout(60):
        while (await h.get(run_id)).state not in states:
            await asyncio.sleep(0.05)


async def test_cancelling_a_parent_cancels_its_children(tmp_path: Path, store_target: str) -> None:
    helper = researcher()
    async with Harness(
        Settings(home=tmp_path), store=store_target, execute=False, agents=(helper,)
    ) as h:
        worker = start_worker(tmp_path, store_target)
        try:
            root = await h.submit(supervisor(helper), "survey")
            await children_in(h, root, RunState.RUNNING)
            await h.cancel(root, reason="enough")
            result = await h.wait(root, timeout=60)
            children = await children_in(h, root, RunState.CANCELLED)
        finally:
            stop(worker)
    assert result.termination == "cancelled"
    assert len(children) == FAN_OUT


async def test_pausing_a_parent_pauses_its_children_and_resuming_resumes_them(
    tmp_path: Path, store_target: str
) -> None:
    helper = researcher()
    async with Harness(
        Settings(home=tmp_path), store=store_target, execute=False, agents=(helper,)
    ) as h:
        worker = start_worker(tmp_path, store_target)
        try:
            root = await h.submit(supervisor(helper), "survey")
            await children_in(h, root, RunState.RUNNING)
            await h.pause(root)
            await state_of(h, root, RunState.PAUSED)
            paused = await children_in(h, root, RunState.PAUSED, RunState.COMPLETED)
            assert any([(await h.get(c)).state == RunState.PAUSED for c in paused])
            await asyncio.sleep(1.5)  # paused means paused: nothing moves meanwhile
            assert (await h.get(root)).state == RunState.PAUSED
            await h.resume(root)
            result = await h.wait(root, timeout=60)
            children = await children_in(h, root, RunState.COMPLETED)
            events = await h.store.events(root)
        finally:
            stop(worker)
    assert result.output == " | ".join(f"found survey/topic-{i}" for i in range(FAN_OUT))
    assert len(children) == FAN_OUT
    assert [p.at for p in payloads(events, RunPaused)] == ["wait"]
    ledger = (tmp_path / "ledger").read_text().splitlines()
    assert sorted(ledger) == sorted(f"survey/topic-{i}" for i in range(FAN_OUT))
