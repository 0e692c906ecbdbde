"""A supervisor with many children: the cost of a child run, and the fan-out against its floor.

    python bench/multi_agent.py [--children 100] [--latency-ms 50] [--reps 5]
    python bench/multi_agent.py --store postgres        # a throwaway cluster, as the tests use

The supervisor's model answers its first turn with one call of the `research` agent tool per
child, all in one message; each researcher's model answers at once (one model call per
child); the supervisor then answers with every result. Every model call takes
`--latency-ms`, so the floor of one supervisor run is three latencies (its call, the
children's calls side by side, its last call). Every run, parent and children, is durable
(SQLite WAL under a scratch HARNESS_HOME).

Rows: the wall time of one supervisor run against that floor; the harness's CPU per child
run (process time of a run with no latency, divided by the children), beside the CPU of a
plain run of one model call, submitted on its own, for comparison. Prints a markdown table.
Numbers depend on the machine; nothing here is a test.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness import Agent, Harness, Message, ModelRequest
from harness.gateway.scripted import FunctionModel, call, reply
from harness.runtime import Settings

ROOT = Path(__file__).resolve().parents[1]


def researcher(latency_s: float) -> Agent:
    async def model(request: ModelRequest) -> Message:
        if latency_s:
            await asyncio.sleep(latency_s)
        return reply(f"found {request.messages[-1].content}")

    return Agent(name="researcher", model=FunctionModel(model, keep_requests=False))


def supervisor(children: int, latency_s: float) -> Agent:
    async def model(request: ModelRequest) -> Message:
        if latency_s:
            await asyncio.sleep(latency_s)
        results = [m.content or "" for m in request.messages if m.role == "tool"]
        if results:
            return reply(f"{len(results)} results")
        calls = [call("research", {"task": f"topic {i}"}, id=f"c{i}") for i in range(children)]
        return reply(None, *calls)

    research = researcher(latency_s).as_tool(name="research", description="Research a topic.")
    return Agent(
        name="supervisor",
        model=FunctionModel(model, keep_requests=False),
        tools=[research],
    )


async def fan_out(store: str | None, children: int, latency_s: float, reps: int) -> list[float]:
    """Wall seconds of `reps` supervisor runs, one after another."""
    walls: list[float] = []
    with tempfile.TemporaryDirectory() as home:
        boss = supervisor(children, latency_s)
        async with Harness(
            Settings(home=Path(home)), store=store, max_concurrent=children + 1
        ) as h:
            await h.run(boss, "warm up")
            for _ in range(reps):
                started = time.perf_counter()
                result = await h.run(boss, "survey")
                walls.append(time.perf_counter() - started)
                if result.output != f"{children} results":
                    raise SystemExit(f"unexpected result: {result.output!r}")
    return walls


async def fan_out_cpu(store: str | None, children: int, reps: int) -> float:
    """Process seconds per child run of a fan-out with no model latency."""
    with tempfile.TemporaryDirectory() as home:
        boss = supervisor(children, 0.0)
        async with Harness(
            Settings(home=Path(home)), store=store, max_concurrent=children + 1
        ) as h:
            await h.run(boss, "warm up")
            started = time.process_time()
            for _ in range(reps):
                await h.run(boss, "survey")
            return (time.process_time() - started) / (reps * children)


async def plain_cpu(store: str | None, runs: int) -> float:
    """Process seconds per plain run of one model call, submitted alone."""
    with tempfile.TemporaryDirectory() as home:
        alone = researcher(0.0)
        async with Harness(Settings(home=Path(home)), store=store) as h:
            await h.run(alone, "warm up")
            started = time.process_time()
            for i in range(runs):
                await h.run(alone, f"topic {i}")
            return (time.process_time() - started) / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, default=100)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--store", default="sqlite", help="sqlite, postgres or a URL")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "bench"))
    from runtime import fresh_store, postgres  # the throwaway cluster the tests use

    latency_s = args.latency_ms / 1000
    with tempfile.TemporaryDirectory() as scratch, postgres(args.store, scratch) as server:
        target = argparse.Namespace(server=server)
        walls = asyncio.run(fan_out(fresh_store(target), args.children, latency_s, args.reps))
        per_child = asyncio.run(fan_out_cpu(fresh_store(target), args.children, args.reps))
        per_plain = asyncio.run(plain_cpu(fresh_store(target), args.children * args.reps))
    floor = 3 * latency_s
    wall = statistics.median(walls)
    print(
        f"\n**A supervisor with {args.children} children** ({args.store}, "
        f"{args.latency_ms:g} ms per model call, median of {args.reps})\n"
    )
    print("| measure | value |")
    print("|---|---:|")
    print(f"| supervisor run, wall ms | {wall * 1000:,.0f} |")
    print(f"| latency floor (3 model calls in sequence), ms | {floor * 1000:,.0f} |")
    print(f"| × the floor | {wall / floor:.2f} |")
    print(
        f"| harness overhead per child run above the floor, ms | "
        f"{(wall - floor) * 1000 / args.children:.2f} |"
    )
    print(f"| CPU per child run (no latency), µs | {per_child * 1e6:,.0f} |")
    print(f"| CPU per plain run of one model call, µs | {per_plain * 1e6:,.0f} |")


if __name__ == "__main__":
    main()
