"""What the Prometheus metrics cost: per run in the subscriber, and end to end.

    python bench/metrics_overhead.py [--runs 400] [--reps 5]

1. The subscriber alone: the committed events of a real 3-step run (a tool call, its
   result, the answer), re-labelled with fresh run ids, fed to a `MetricsSubscriber`;
   microseconds per run and per event.
2. End to end: the same runs through a durable `Harness` on SQLite, with and without
   `metrics=True`, in alternating repetitions; the median wall time of each.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

from harness import Agent, Harness, tool
from harness.core.events import RunEvent
from harness.observability.metrics import MetricsSubscriber
from harness.runtime import Settings
from harness.testing import FunctionModel, call, reply


@tool(side_effects="none")
def lookup(city: str) -> str:
    """Look up a city."""
    return f"{city}: sunny"


def agent() -> Agent:
    def act(request):  # type: ignore[no-untyped-def]
        if request.messages[-1].role == "user":
            return reply(None, call("lookup", {"city": "Oslo"}))
        return reply("Oslo is sunny")

    return Agent(name="bench", model=FunctionModel(act, name="bench-model"), tools=[lookup])


async def one_run_events(home: Path) -> list[RunEvent]:
    async with Harness(Settings(home=home), store=str(home / "events.db")) as h:
        result = await h.run(agent(), "weather?")
        return await h.store.events(result.run_id)


def subscriber_cost(events: list[RunEvent], runs: int) -> tuple[float, float]:
    """Microseconds per run and per event, for `runs` runs through one subscriber."""
    batches = [[dataclasses.replace(e, run_id=f"run_{i}") for e in events] for i in range(runs)]
    metrics = MetricsSubscriber()
    started = time.perf_counter()
    for batch in batches:
        for event in batch:
            metrics(event)
    spent = time.perf_counter() - started
    return spent / runs * 1e6, spent / (runs * len(events)) * 1e6


async def batch_seconds(home: Path, runs: int, metrics: bool, rep: int) -> float:
    store = str(home / f"{'on' if metrics else 'off'}-{rep}.db")
    async with Harness(Settings(home=home), store=store, metrics=metrics) as h:
        started = time.perf_counter()
        await asyncio.gather(*(h.run(agent(), f"weather {i}?") for i in range(runs)))
        return time.perf_counter() - started


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        events = await one_run_events(home)
        per_run, per_event = subscriber_cost(events, 20_000)
        print(f"subscriber: {per_run:.1f} µs per run ({len(events)} events), "
              f"{per_event:.2f} µs per event")  # fmt: skip
        times: dict[bool, list[float]] = {False: [], True: []}
        for rep in range(args.reps):
            for metrics in (False, True) if rep % 2 == 0 else (True, False):
                times[metrics].append(await batch_seconds(home, args.runs, metrics, rep))
    off, on = statistics.median(times[False]), statistics.median(times[True])
    print(f"{args.runs} durable runs on SQLite, median of {args.reps}:")
    print(
        f"  metrics off {off * 1000:.0f} ms, on {on * 1000:.0f} ms ({(on / off - 1) * 100:+.1f} %)"
    )


if __name__ == "__main__":
    asyncio.run(main())
