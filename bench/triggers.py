"""What a trigger costs the runs it does not fire on.

    python bench/triggers.py [--runs 300] [--rounds 5]

Durable runs (model → tool → model, an in-process model, SQLite under a scratch directory)
are executed in batches of `--runs`, in three set-ups taken in turn, `--rounds` times:

- none: no trigger;
- other type: a trigger on `run_cancelled`, an event these runs never have (the feed is
  filtered by type in SQL: nothing is read for them);
- no match: a trigger on `run_finished` of another agent: every run's `run_finished` is
  read from the feed and its run's row read, and nothing is written.

For each it prints the median CPU time of the process per run (`time.process_time`, every
thread), the store's transactions per run (`SQLiteStore.commit_stats`), and the engine's
calls to the store in a batch: feed reads, run reads, cursor writes (counted by a
subclass of the store). CPU differences of a few percent are the machine's noise here;
the counts are not. Numbers depend on the machine; nothing here is a test.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness import Agent, Harness, Message, ModelRequest, tool
from harness.gateway.scripted import FunctionModel, call, reply
from harness.runtime import Settings
from harness.store.protocol import FeedPosition
from harness.store.sqlite import SQLiteStore

ARGS = '{"a": 2, "b": 3}'


@tool(side_effects="none")
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _model(request: ModelRequest) -> Message:
    last = request.messages[-1]
    return reply(last.content) if last.role == "tool" else reply(None, call("add", ARGS))


class CountingStore(SQLiteStore):
    """Counts what the trigger engine asks of the store."""

    feed_reads = cursor_writes = 0

    async def read_feed(self, *args: Any, **kwargs: Any) -> Any:
        self.feed_reads += 1
        return await super().read_feed(*args, **kwargs)

    async def move_feed_cursors(self, positions: Mapping[str, FeedPosition]) -> None:
        self.cursor_writes += 1
        await super().move_feed_cursors(positions)


def agent(name: str) -> Agent:
    return Agent(name=name, model=FunctionModel(_model, keep_requests=False), tools=[add])


async def batch(home: Path, setup: str, runs: int) -> tuple[float, float, int, int]:
    """CPU seconds per run, transactions per run, feed reads, cursor writes."""
    store = CountingStore(home / f"{setup}.db")
    await store.open()
    worker, other = agent("worker"), agent("other")
    h = Harness(Settings(home=home), store=store, agents=(worker, other), max_concurrent=64)
    if setup == "other type":
        h.on("run_cancelled", start=other, task="{run_id}", name="t")
    elif setup == "no match":
        h.on("run_finished", {"agent": "other"}, start=other, task="{run_id}", name="t")
    async with h:
        await asyncio.sleep(0.1)
        before, cpu = store.commit_stats().count, time.process_time()
        ids = [await h.submit(worker, "2+3?") for _ in range(runs)]
        for run_id in ids:
            await h.wait(run_id)
        await asyncio.sleep(0.6)  # the trigger's reads of the last events
        cpu, commits = time.process_time() - cpu, store.commit_stats().count - before
    await store.close()
    return cpu / runs, commits / runs, store.feed_reads, store.cursor_writes


async def main(runs: int, rounds: int) -> None:
    setups = ("none", "other type", "no match")
    found: dict[str, list[tuple[float, float, int, int]]] = {s: [] for s in setups}
    with tempfile.TemporaryDirectory() as scratch:
        for n in range(rounds):
            for setup in setups:
                home = Path(scratch) / f"{n}"
                home.mkdir(exist_ok=True)
                found[setup].append(await batch(home, setup, runs))
    print(
        f"| set-up | CPU per run (median of {rounds}) | transactions per run "
        f"| feed reads per {runs} runs | cursor writes per {runs} runs |"
    )
    print("|---|---|---|---|---|")
    for setup, rows in found.items():
        cpu = statistics.median(r[0] for r in rows) * 1e6
        commits = statistics.median(r[1] for r in rows)
        reads = statistics.median(r[2] for r in rows)
        writes = statistics.median(r[3] for r in rows)
        print(f"| {setup} | {cpu:.0f} µs | {commits:.2f} | {reads:.0f} | {writes:.0f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.rounds))
