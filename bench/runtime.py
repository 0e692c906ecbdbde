"""The durable runtime under load: per-run cost, concurrency, queueing and takeover.

    python bench/runtime.py [--runs 1000] [--concurrent 1000] [--queued 10000] [--takeover 1000]

Scenario of ../shared/bench/peers: model → tool → model with an in-process model; every
event and message of every run is committed to SQLite (WAL) under a scratch HARNESS_HOME.
Prints a markdown table. Numbers depend on the machine; nothing here is a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from harness import Agent, Harness, Message, ModelRequest, tool
from harness.gateway.scripted import FunctionModel, call, reply
from harness.runtime import Settings

ARGS = '{"a": 2, "b": 3}'


@tool(side_effects="none")
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def agent(latency_s: float) -> Agent:
    async def model(request: ModelRequest) -> Message:
        if latency_s:
            await asyncio.sleep(latency_s)
        last = request.messages[-1]
        return reply(last.content) if last.role == "tool" else reply(None, call("add", ARGS))

    return Agent(name="bench", model=FunctionModel(model), tools=[add])


def raw_durable_us(runs: int, home: Path) -> float:
    """The floor: a hand-written loop appending each message as a row (WAL, NORMAL)."""
    db = sqlite3.connect(home / "raw.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE m (run TEXT, seq INTEGER, body TEXT)")
    start = time.perf_counter()
    for n in range(runs):
        messages = [
            {"role": "user", "content": "What is 2 + 3?"},
            {"role": "assistant", "tool_calls": [{"id": "c", "arguments": ARGS}]},
            {"role": "tool", "content": str(2 + 3)},
            {"role": "assistant", "content": "5"},
        ]
        for seq, message in enumerate(messages):
            db.execute("INSERT INTO m VALUES (?, ?, ?)", (f"r{n}", seq, json.dumps(message)))
    db.close()
    return (time.perf_counter() - start) / runs * 1e6


async def sequential_us(runs: int, home: Path) -> float:
    async with Harness(Settings(home=home), adopt=False) as h:
        bench = agent(0)
        for _ in range(20):
            await h.run(bench, "What is 2 + 3?")
        start = time.perf_counter()
        for _ in range(runs):
            assert (await h.run(bench, "What is 2 + 3?")).output == "5"
        return (time.perf_counter() - start) / runs * 1e6


async def concurrent_ms(runs: int, latency: float, home: Path) -> tuple[float, float, str]:
    """Wall ms and RSS growth of a burst, and how long its commits held the loop."""
    async with Harness(
        Settings(home=home), max_concurrent=runs, max_queue=runs + 1, adopt=False
    ) as h:
        bench = agent(latency)
        await h.run(bench, "warm up")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        results = await asyncio.gather(*(h.run(bench, "What is 2 + 3?") for _ in range(runs)))
        wall = (time.perf_counter() - start) * 1e3
        assert all(r.output == "5" for r in results)
        rss = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        return wall, rss, commit_times(h.store)


def commit_times(store: object) -> str:
    """`count, p50/p99/max ms` of the commits on the loop, or why there are none."""
    stats = getattr(store, "commit_stats", None)
    if stats is None:
        return "n/a (writes on a writer thread)"
    s = stats()
    return (
        f"{s.count} commits, {s.p50_ms:.2f} / {s.p99_ms:.2f} / {s.max_ms:.2f} "
        f"(CPU {s.cpu_p50_ms:.2f} / {s.cpu_p99_ms:.2f} / {s.cpu_max_ms:.2f})"
    )


async def queued_s(runs: int, concurrency: int, home: Path) -> float:
    async with Harness(
        Settings(home=home), max_concurrent=concurrency, max_queue=runs + 1, adopt=False
    ) as h:
        bench = agent(0)
        ids = [await h.submit(bench, "What is 2 + 3?") for _ in range(runs)]
        start = time.perf_counter()
        for run_id in ids:
            await h.wait(run_id)
        return time.perf_counter() - start


async def takeover_s(runs: int, home: Path) -> float:
    """Start runs in a process that is then killed; time until another finishes them all."""
    here, home_text = str(Path(__file__).parent), str(home)
    script = "\n".join([
        f"import asyncio, sys; sys.path.insert(0, {here!r})",
        "from runtime import agent",
        "from harness import Harness",
        "from harness.runtime import Settings",
        "from pathlib import Path",
        "async def main():",
        f"    settings = Settings(home=Path({home_text!r}))",
        f"    async with Harness(settings, agents=(agent(30),), max_concurrent={runs},",
        "                       lease_s=1.0):",
        "        print('ready', flush=True)",
        "        await asyncio.Event().wait()",
        "asyncio.run(main())",
    ])  # fmt: skip
    async with Harness(Settings(home=home), execute=False, max_queue=runs + 1) as h:
        ids = [await h.submit(agent(0), "What is 2 + 3?") for _ in range(runs)]
        victim = await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, stdout=asyncio.subprocess.PIPE
        )
        assert victim.stdout is not None
        assert (await victim.stdout.readline()).strip() == b"ready"
        while len(await h.list(state="running", limit=runs)) < runs:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        victim.kill()
        await victim.wait()
        start = time.perf_counter()
        async with Harness(
            Settings(home=home), agents=(agent(0),), max_concurrent=runs, lease_s=1.0
        ) as heir:
            for run_id in ids:
                assert (await heir.wait(run_id)).output == "5"
        return time.perf_counter() - start


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        homes = [home / name for name in ("raw", "seq", "conc", "queue", "takeover")]
        for path in homes:
            path.mkdir()
        raw = raw_durable_us(args.runs, homes[0])
        seq = await sequential_us(args.runs, homes[1])
        wall, rss, commits = await concurrent_ms(args.concurrent, args.latency, homes[2])
        queued = await queued_s(args.queued, 100, homes[3])
        takeover = await takeover_s(args.takeover, homes[4])
    print("| measure | value |\n|---|---:|")
    print(f"| raw durable loop (4 SQLite rows per run), µs/run | {raw:.0f} |")
    print(f"| harness durable run (every event and message committed), µs/run | {seq:.0f} |")
    print(f"| ratio to the raw durable loop | {seq / raw:.1f}× |")
    print(
        f"| {args.concurrent:,} concurrent durable runs, {args.latency * 1e3:.0f} ms model "
        f"latency: wall ms (floor {2 * args.latency * 1e3:.0f}) | {wall:.0f} |"
    )
    print(f"| RSS growth during that burst, MiB | {rss:.1f} |")
    print(f"| commits holding the loop in that burst: wall p50 / p99 / max ms | {commits} |")
    print(f"| {args.queued:,} queued runs, 100 at a time: s | {queued:.1f} |")
    print(
        f"| takeover of {args.takeover:,} in-flight runs after a SIGKILL (lease 1 s), s to "
        f"finish them all | {takeover:.1f} |"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--concurrent", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--queued", type=int, default=10_000)
    parser.add_argument("--takeover", type=int, default=1000)
    asyncio.run(main(parser.parse_args()))
