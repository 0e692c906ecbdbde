"""Triggers across real processes: two workers on one store, and a worker SIGKILLed as its
coder runs finish. Each finished coder run gets exactly one reviewer run, on SQLite and
PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from harness import Harness
from harness.core.events import RunStarted, TriggerFired, payloads
from harness.runtime import Settings
from harness.runtime.triggers import trigger_run_id
from harness.store.protocol import RunRecord

WORKER = Path(__file__).parent / "processes" / "trigger_worker.py"


class Worker:
    """A `trigger_worker.py` child process."""

    def __init__(
        self, home: Path, store: str, *, coder_latency_s: float, trigger: bool = True
    ) -> None:
        args = [sys.executable, str(WORKER), str(home), str(coder_latency_s)]
        env = {**os.environ, "HARNESS_STORE": store}
        self.proc = subprocess.Popen(
            [*args, *([] if trigger else ["notrigger"])], env=env, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("ready"), f"the worker ended (exit {self.proc.wait()})"

    def kill(self) -> None:
        """SIGKILL: no cleanup, no cursor saved, leases left to expire."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


async def runs_of(h: Harness, agent: str) -> list[RunRecord]:
    return await h.store.list_runs(agent=agent, limit=None)


async def all_reviewed(h: Harness, coders: list[str], timeout: float = 60) -> list[RunRecord]:
    """The reviewer runs, once every coder run has one and all of them ended."""
    async with asyncio.timeout(timeout):
        while True:
            done = [r for r in await runs_of(h, "coder") if r.state == "COMPLETED"]
            reviews = await runs_of(h, "reviewer")
            if len(done) == len(coders) and len(reviews) >= len(coders):
                if all(r.state == "COMPLETED" for r in reviews):
                    await asyncio.sleep(1.0)  # later polls of every worker: still no more
                    return await runs_of(h, "reviewer")
            await asyncio.sleep(0.05)


async def check_once_each(h: Harness, coders: list[str], reviews: list[RunRecord]) -> None:
    """One reviewer per coder run, with the derived id, its `trigger_fired`, and one start."""
    sources = Counter(r.metadata["trigger"]["source_run_id"] for r in reviews)
    assert sources == Counter(coders)
    for review in reviews:
        events = [e async for e in h.events(review.run_id)]
        (fired,) = payloads(events, TriggerFired)
        source_events = [e async for e in h.events(fired.source_run_id)]
        end = next(e for e in source_events if e.seq == fired.source_seq)
        assert end.type == "run_finished"
        assert review.run_id == trigger_run_id("review", end)
        assert review.task is not None
        assert fired.source_run_id in review.task
        assert len(payloads(events, RunStarted)) >= 1


async def submit_coders(h: Harness, count: int) -> list[str]:
    return [await h.submit("coder", f"fix bug {n}") for n in range(count)]


def client(tmp_path: Path, store: str) -> Harness:
    from trigger_agents import coder, reviewer  # the children's agents, to name them

    return Harness(
        Settings(home=tmp_path), store=store, agents=(coder(), reviewer()), execute=False
    )


sys.path.insert(0, str(WORKER.parent))


async def test_two_workers_with_the_same_trigger_start_one_reviewer_per_coder_run(
    tmp_path: Path, store_target: str
) -> None:
    workers = [Worker(tmp_path, store_target, coder_latency_s=0.05) for _ in range(2)]
    try:
        async with client(tmp_path, store_target) as h:
            coders = await submit_coders(h, 12)
            reviews = await all_reviewed(h, coders)
            await check_once_each(h, coders, reviews)
            owners = {r.owner for r in await runs_of(h, "coder")} | {r.owner for r in reviews}
    finally:
        for worker in workers:
            worker.kill()
    assert len(reviews) == 12
    assert len(owners) >= 1


async def test_a_worker_killed_as_its_coder_runs_finish_fires_each_once_after_restart(
    tmp_path: Path, store_target: str
) -> None:
    async with client(tmp_path, store_target) as h:
        seen_at_kill: list[tuple[int, int]] = []
        coders: list[str] = []
        for _ in range(3):
            worker = Worker(tmp_path, store_target, coder_latency_s=0.2)
            try:
                batch = await submit_coders(h, 6)
                coders += batch
                async with asyncio.timeout(30):  # kill as soon as one of the batch finished
                    while not any(
                        r.state == "COMPLETED" and r.run_id in batch
                        for r in await runs_of(h, "coder")
                    ):
                        await asyncio.sleep(0.002)
            finally:
                worker.kill()
            done = sum(r.state == "COMPLETED" for r in await runs_of(h, "coder"))
            seen_at_kill.append((done, len(await runs_of(h, "reviewer"))))
        after = Worker(tmp_path, store_target, coder_latency_s=0.0)
        try:
            reviews = await all_reviewed(h, coders)
            await check_once_each(h, coders, reviews)
        finally:
            after.kill()
    print("finished coder runs and reviewer runs at each kill:", seen_at_kill)


async def test_events_of_a_worker_without_the_trigger_fire_when_a_worker_with_it_starts(
    tmp_path: Path, store_target: str
) -> None:
    first = Worker(tmp_path, store_target, coder_latency_s=0.0)  # the trigger's cursor: now
    first.kill()
    plain = Worker(tmp_path, store_target, coder_latency_s=0.0, trigger=False)
    try:
        async with client(tmp_path, store_target) as h:
            coders = await submit_coders(h, 4)
            async with asyncio.timeout(30):
                while sum(r.state == "COMPLETED" for r in await runs_of(h, "coder")) < 4:
                    await asyncio.sleep(0.05)
            assert await runs_of(h, "reviewer") == []
            plain.kill()
            again = Worker(tmp_path, store_target, coder_latency_s=0.0)
            try:
                reviews = await all_reviewed(h, coders)
                await check_once_each(h, coders, reviews)
            finally:
                again.kill()
    finally:
        plain.kill()
