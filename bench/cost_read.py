"""How long `harness cost` takes over a store of many scripted runs.

Makes RUNS runs (each: three tool calls, one answer, fixed usage on a priced profile) in a
scratch HARNESS_HOME, then times `harness cost` with a few `--by` choices:

    python bench/cost_read.py [--runs 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import Agent, Harness, ModelRequest, tool
from harness.core import Usage
from harness.gateway.model import ModelResponse
from harness.gateway.profiled import ProfiledModel
from harness.runtime.settings import load_settings
from harness.testing import FunctionModel, call, reply

HARNESS = str(Path(sys.executable).parent / "harness")
CONFIG = """
[models.paid]
model = "fake"
base_url = "http://127.0.0.1:9/v1"
prices = { input = 2.0, output = 8.0, cached_input = 0.5 }
"""
USAGE = Usage(input_tokens=2000, cached_tokens=1500, output_tokens=80, requests=1)


@tool(side_effects="none")
def lookup(order: int) -> str:
    """Look up an order."""
    return f"order {order}: shipped " * 20


@tool(side_effects="none")
def history(order: int) -> str:
    """The history of an order."""
    return f"order {order}: event " * 60


def answer(request: ModelRequest) -> ModelResponse:
    done = sum(m.role == "tool" for m in request.messages)
    if done >= 3:
        return ModelResponse(message=reply("done"), finish_reason="stop", usage=USAGE)
    name = "history" if done == 1 else "lookup"
    message = reply(None, call(name, {"order": done}))
    return ModelResponse(message=message, finish_reason="tool_calls", usage=USAGE)


async def make(home: Path, runs: int) -> None:
    settings = load_settings(home)
    model = ProfiledModel(FunctionModel(answer), settings.profiles["paid"])
    kinds = ("refund", "billing", "shipping")
    async with Harness(settings, max_concurrent=64) as harness:
        for start in range(0, runs, 64):
            agents = [
                Agent(name=f"agent{i % 2}", model=model, tools=[lookup, history])
                for i in range(start, min(runs, start + 64))
            ]
            await asyncio.gather(
                *(harness.run(a, "go", task_type=kinds[i % 3]) for i, a in enumerate(agents, start))
            )


def timed(home: Path, *flags: str) -> tuple[float, str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "COLUMNS": "200"}
    started = time.perf_counter()
    done = subprocess.run(
        [HARNESS, "cost", *flags], env=env, cwd=home, capture_output=True, text=True, check=True
    )
    return time.perf_counter() - started, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        (home / "harness.toml").write_text(CONFIG)
        started = time.perf_counter()
        asyncio.run(make(home, args.runs))
        print(f"made {args.runs} runs in {time.perf_counter() - started:.1f} s")
        for flags in (
            (),
            ("--by", "model"),
            ("--by", "tool"),
            ("--by", "task-type", "--by", "tool"),
        ):
            seconds, out = timed(home, *flags)
            print(f"\n$ harness cost {' '.join(flags)}   ({seconds:.2f} s)\n{out}")


if __name__ == "__main__":
    main()
