"""A realistic batch of runs for `harness stats`, and how long the statistics take to read.

Runs N agents (seeded, so the batch is the same every time) over the built-in file tools
(`read_file`, `list_dir`, `search`) on a small workspace of this repository's sources.
Their model is a `FunctionModel` that explores for 1 to 9 steps, now and then reads a file
that does not exist, calls a tool that does not exist or passes bad arguments, and then
answers; some runs have budgets that stop them (max_steps, max_tool_calls), a few models
fail. Input tokens are the scripted model's estimate of each request, so the context grows
with every step as it would.

    python bench/stats_batch.py [--runs 300] [--home DIR]

Prints the time to create the batch, to compute the statistics in-process and to run
`harness stats` (a fresh process), then the screen.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import Agent, Harness, Limits, ModelRequest
from harness.core import ToolCall
from harness.gateway.scripted import Reply
from harness.observability.stats import compute_stats
from harness.runtime import Settings
from harness.store import open_store
from harness.testing import FunctionModel, call, reply

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ["read_file", "list_dir", "search"]
FILES = ["errors.py", "core/usage.py", "core/events.py", "store/_reads.py", "agent/loop.py"]


def explorer(name: str) -> FunctionModel:
    """A model that makes a tool call a step, then answers; how many steps, and which calls,
    follow from the run's task (`task 17`), so that every run of the batch is the same."""
    latency = 0.02 if name == "qwen3-8b" else 0.008

    async def turn(request: ModelRequest) -> Reply:
        task = next(m.content or "" for m in request.messages if m.role == "user")
        made = sum(m.role == "assistant" for m in request.messages)
        rng = random.Random(f"{task}/{made}")
        await asyncio.sleep(rng.uniform(0.5, 2.0) * latency)
        if made >= random.Random(task).randint(0, 8):
            if rng.random() < 0.03:
                raise RuntimeError("the model server went away")
            return reply(f"done after {made} tool calls")
        return reply(None, next_call(rng))

    return FunctionModel(turn, name=name)


def next_call(rng: random.Random) -> ToolCall:
    roll = rng.random()
    if roll < 0.06:
        return call("open_file", {"path": rng.choice(FILES)})  # no such tool
    if roll < 0.15:
        return call("read_file", {"path": f"missing/{rng.randrange(100)}.py"})
    if roll < 0.2:
        return call("search", {"pattern": "(unclosed", "path": "."})
    if roll < 0.55:
        return call("read_file", {"path": rng.choice(FILES)})
    if roll < 0.8:
        return call("search", {"pattern": rng.choice(["def \\w+", "Usage", "TODO"]), "path": "."})
    return call("list_dir", {"path": rng.choice([".", "core", "store"]), "depth": 2})


def agents(workspace: Path) -> list[Agent]:
    """Agents by name: each name is one agent of the Harness, with one model."""
    kinds = [
        ("triage", "llama-3.1-8b", Limits()),
        ("research", "qwen3-8b", Limits()),
        ("triage-short", "llama-3.1-8b", Limits(max_steps=4)),
        ("research-budget", "qwen3-8b", Limits(max_tool_calls=2)),
    ]
    return [
        Agent(name=name, model=explorer(model), tools=TOOLS, workspace=workspace, limits=limits)
        for name, model, limits in kinds
    ]


async def make_batch(home: Path, count: int, workspace: Path) -> None:
    picked = random.Random(12).choices(agents(workspace), [5, 3, 2, 2], k=count)
    async with Harness(Settings(home=home), max_concurrent=32) as harness:
        await asyncio.gather(*(harness.run(a, f"task {i}") for i, a in enumerate(picked)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--home", type=Path, default=None)
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="harness-stats-"))
    workspace = Path(tempfile.mkdtemp(prefix="harness-stats-ws-"))
    shutil.copytree(ROOT / "src" / "harness", workspace, dirs_exist_ok=True)
    started = time.perf_counter()
    asyncio.run(make_batch(home, args.runs, workspace))
    made = time.perf_counter() - started
    started = time.perf_counter()
    asyncio.run(read_stats(home))
    computed = time.perf_counter() - started
    env = {**os.environ, "HARNESS_HOME": str(home)}
    started = time.perf_counter()
    screen = subprocess.run(
        [str(Path(sys.executable).parent / "harness"), "stats"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    shown = time.perf_counter() - started
    print(
        f"{args.runs} runs made in {made:.1f} s; stats computed in {computed * 1000:.0f} ms; "
        f"`harness stats` took {shown * 1000:.0f} ms (store: {home / 'harness.db'})\n"
    )
    print(screen)
    shutil.rmtree(workspace)


async def read_stats(home: Path) -> None:
    store = await open_store(home / "harness.db")
    try:
        await compute_stats(store)
    finally:
        await store.close()


if __name__ == "__main__":
    main()
