"""How long a control takes to reach a run's owner in another process, per store.

    python bench/control_latency.py [--samples N]

An owner process (this file with `--owner STORE`) executes runs of an agent that takes
one short step after another. For each sample this process submits such a run, waits
until it runs, then asks for a pause exactly as `harness pause RUN` does
(`Harness(execute=False).pause`) and measures from just before that call to the
`ts` of the owner's `run_paused` event (both processes read the same clock). The
owner notices the control, then pauses at its next step boundary (a few milliseconds).
The CLI's own start-up (importing Python and harness) is not included.

SQLite: the owner polls for controls every 0.2 s (the default). PostgreSQL: NOTIFY
brings them at once; its server is HARNESS_TEST_POSTGRES or a throwaway cluster from
.ci/postgres.sh. Prints one table row per store: p50, p95 and max in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness import Agent, Harness, Limits, tool
from harness.gateway.scripted import FunctionModel, call, reply
from harness.runtime import Settings

ROOT = Path(__file__).resolve().parents[1]


@tool(side_effects="none")
def tick() -> str:
    """Do nothing."""
    return "tick"


def ticker() -> Agent:
    model = FunctionModel(lambda request: reply(None, call("tick", {})), latency_s=0.002)
    return Agent(name="ticker", model=model, tools=[tick], limits=Limits(max_steps=1_000_000))


async def owner(store: str, home: str) -> None:
    async with Harness(Settings(home=Path(home)), store=store, agents=(ticker(),)):
        print("ready", flush=True)
        await asyncio.Event().wait()


async def until_state(h: Harness, run_id: str, state: str) -> None:
    for _ in range(60_000):  # five minutes at most
        if (await h.get(run_id)).state == state:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"run {run_id} never became {state}")


async def sample(h: Harness) -> float:
    """One pause: milliseconds from the request to the owner's run_paused."""
    run_id = await h.submit(ticker(), "tick")
    await until_state(h, run_id, "RUNNING")
    await asyncio.sleep(random.uniform(0.05, 0.3))  # a few steps in, anywhere in a poll
    sent = time.time()
    await h.pause(run_id)
    await until_state(h, run_id, "PAUSED")
    paused = [e for e in await h.store.events(run_id) if e.type == "run_paused"][-1]
    await h.cancel(run_id)
    return (paused.ts - sent) * 1000


async def measure(store: str, home: str, samples: int) -> list[float]:
    child = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--owner", store, "--home", home, stdout=subprocess.PIPE
    )
    try:
        assert child.stdout is not None
        assert (await child.stdout.readline()).strip() == b"ready"
        async with Harness(Settings(home=Path(home)), store=store, execute=False) as h:
            return [await sample(h) for _ in range(samples)]
    finally:
        child.kill()
        await child.wait()


@contextmanager
def postgres() -> Iterator[str]:
    url = os.environ.get("HARNESS_TEST_POSTGRES")
    if url:
        yield url
        return
    directory = tempfile.mkdtemp(prefix="harness-bench-pg-")
    script = str(ROOT / ".ci" / "postgres.sh")
    env = {**os.environ, "HARNESS_PG_NO_INSTALL": "1"}
    started = subprocess.run(
        ["bash", script, "start", directory], env=env, capture_output=True, text=True, check=True
    )
    try:
        yield started.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run(["bash", script, "stop", directory], capture_output=True, check=False)


def row(name: str, ms: list[float]) -> str:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"| {name:<10} | {len(ms):>7} | {statistics.median(ms):>8.1f} | {p95:>8.1f} "
        f"| {max(ms):>8.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--owner", help=argparse.SUPPRESS)
    parser.add_argument("--home", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.owner:
        asyncio.run(owner(args.owner, args.home))
        return
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as home:
        results["sqlite"] = asyncio.run(measure(f"{home}/harness.db", home, args.samples))
    with postgres() as url, tempfile.TemporaryDirectory() as home:
        results["postgresql"] = asyncio.run(measure(url, home, args.samples))
    print("control latency: `pause` sent -> run_paused at the owner (ms)\n")
    print("| store      | samples |      p50 |      p95 |      max |")
    print("|------------|---------|----------|----------|----------|")
    for name, ms in results.items():
        print(row(name, ms))


if __name__ == "__main__":
    main()
