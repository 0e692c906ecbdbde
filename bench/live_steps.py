"""What `[server] live_steps` costs a durable run: one more commit before each model call.

`harness serve` executes runs with `Harness(live_steps=True)`: each step commits before its
model call, so event streams show the model called (and a safe tool's result) while it
thinks. This times sequential durable runs on SQLite with it off and on, interleaved,
and counts the store's commits per run.

The scenario of bench/overhead.py: one safe tool `add(a, b)`; the model asks for add(2, 3),
then for it again, then answers (3 model calls, 2 tool calls).

    python bench/live_steps.py [--runs 200] [--rounds 5]

Prints a markdown table. Nothing here is a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from harness import Agent, Harness, Message, ModelRequest, tool
from harness.core.events import RunEvent
from harness.gateway.scripted import FunctionModel, call, reply
from harness.runtime import Settings
from harness.store.protocol import StepWrite

ARGS = '{"a": 2, "b": 3}'


@tool(side_effects="none")
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _script(request: ModelRequest) -> Message:
    calls = sum(1 for m in request.messages if m.role == "tool")
    if calls >= 2:
        return reply("5")
    return reply(None, call("add", ARGS))


AGENT = Agent(name="adder", model=FunctionModel(_script), tools=[add])


async def _batch(home: Path, runs: int, *, live: bool) -> tuple[float, float, float]:
    """Seconds of CPU and of wall time per run, and commits per run."""
    async with Harness(
        Settings(home=home), store=str(home / f"h-{live}.db"), agents=(AGENT,), live_steps=live
    ) as h:
        await h.run(AGENT, "warm up")
        commits = 0
        real_append = h.store.append

        async def counted(step: StepWrite) -> list[RunEvent]:
            nonlocal commits
            commits += 1
            return await real_append(step)

        h.store.append = counted  # type: ignore[method-assign]
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(runs):
            await h.run(AGENT, "What is 2 + 3?")
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return cpu / runs, wall / runs, commits / runs


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    found: dict[bool, list[tuple[float, float, float]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as scratch:
        for index in range(args.rounds):
            for live in (False, True) if index % 2 == 0 else (True, False):
                home = Path(scratch) / f"{index}-{live}"
                home.mkdir()
                found[live].append(await _batch(home, args.runs, live=live))
    print("| live_steps | CPU µs/run (median) | wall µs/run (median) | commits/run |")
    print("|---|---|---|---|")
    for live, rows in found.items():
        cpu = statistics.median(r[0] for r in rows) * 1e6
        wall = statistics.median(r[1] for r in rows) * 1e6
        print(f"| {'on' if live else 'off'} | {cpu:,.0f} | {wall:,.0f} | {rows[0][2]:.1f} |")


if __name__ == "__main__":
    asyncio.run(main())
