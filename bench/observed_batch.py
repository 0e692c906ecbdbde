"""A batch of runs over real HTTP and priced model profiles, then what harness shows of it.

The models are two OpenAI-compatible servers on 127.0.0.1 (`harness.testing`'s fake, so no
network and no GPU), reached through profiles in a `harness.toml` like a user's: `fast`
and `smart` have prices, `lab` has none (its cost is unknown, never $0). Agents explore a
copy of this repository's sources with the built-in file tools; how many steps a run takes
and which calls it makes follow from its task text (seeded: the batch is the same every
time), now and then a call fails (a missing file, a bad pattern, a tool that does not
exist), and the `smart` server answers 503 now and then (the profile retries). Input
tokens grow with the conversation, as they would.

    python bench/observed_batch.py [--runs 60] [--home DIR]

Prints `harness stats`, `harness cost --by model`, `--by task-type`, `--by tool` and the
`harness trace` of one run, as the README shows them.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness import Agent, Harness
from harness.runtime.settings import load_settings
from harness.testing import FakeOpenAIServer, FakeReply

ROOT = Path(__file__).resolve().parents[1]
HARNESS = str(Path(sys.executable).parent / "harness")
FILES = ["errors.py", "core/usage.py", "core/events.py", "store/_reads.py", "agent/loop.py"]
TOOLS = ["read_file", "list_dir", "search"]
SMART_REQUESTS = itertools.count()
KINDS = [  # agent, profile, task type, weight
    ("support", "fast", "refund", 5),
    ("support", "smart", "billing", 3),
    ("ops", "smart", "triage", 2),
    ("ops", "lab", "triage", 1),
]


def respond(body: dict[str, Any]) -> FakeReply:
    """The next reply of a run: a tool call per step, then an answer.

    The `smart` server answers every 11th request it gets with a 503 (the profile retries).
    """
    if body["model"] == "gpt-4.1-mini" and next(SMART_REQUESTS) % 11 == 10:
        return FakeReply.error(503, "overloaded")
    messages = body["messages"]
    task = next(m["content"] for m in messages if m["role"] == "user")
    made = sum(m["role"] == "assistant" for m in messages)
    rng = random.Random(f"{task}/{made}")
    size = len(json.dumps(messages)) // 4
    tokens = {"input_tokens": size, "output_tokens": rng.randint(20, 90)}
    if made >= random.Random(task).randint(1, 7):
        return FakeReply.text(f"Done after {made} tool calls.", **tokens)
    name, arguments = next_call(rng)
    return dataclasses.replace(FakeReply.tool_call(name, arguments), **tokens)


def next_call(rng: random.Random) -> tuple[str, dict[str, Any]]:
    roll = rng.random()
    if roll < 0.05:
        return "open_file", {"path": rng.choice(FILES)}  # no such tool
    if roll < 0.13:
        return "read_file", {"path": f"missing/{rng.randrange(100)}.py"}
    if roll < 0.17:
        return "search", {"pattern": "(unclosed", "path": "."}
    if roll < 0.55:
        return "read_file", {"path": rng.choice(FILES)}
    if roll < 0.8:
        return "search", {"pattern": rng.choice(["def \\w+", "Usage", "TODO"]), "path": "."}
    return "list_dir", {"path": rng.choice([".", "core", "store"]), "depth": 2}


def config(fast: str, smart: str) -> str:
    return (
        f'[models.fast]\nmodel = "qwen3-8b"\nbase_url = "{fast}"\n'
        "prices = { input = 0.05, output = 0.25 }\n\n"
        f'[models.smart]\nmodel = "gpt-4.1-mini"\nbase_url = "{smart}"\nmax_retries = 2\n'
        "prices = { input = 0.40, output = 1.60, cached_input = 0.10 }\n\n"
        f'[models.lab]\nmodel = "lab-model"\nbase_url = "{fast}"\n'
    )


async def make_batch(home: Path, workspace: Path, count: int) -> list[str]:
    picked = random.Random(7).choices(KINDS, [k[3] for k in KINDS], k=count)
    async with Harness(load_settings(home), max_concurrent=16) as harness:
        ids = []
        for i, (name, profile, task_type, _) in enumerate(picked):
            agent = Agent(name=f"{name}-{profile}", model=profile, tools=TOOLS, workspace=workspace)
            ids.append(await harness.submit(agent, f"task {i}", task_type=task_type))
        for run_id in ids:
            await harness.wait(run_id, timeout=120)
        return ids


def show(home: Path, *args: str) -> None:
    env = {**os.environ, "HARNESS_HOME": str(home), "COLUMNS": "100"}
    done = subprocess.run([HARNESS, *args], env=env, capture_output=True, text=True, check=True)
    print(f"$ harness {' '.join(args)}\n{done.stdout}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--home", type=Path, default=None)
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="harness-observed-"))
    workspace = Path(tempfile.mkdtemp(prefix="harness-observed-ws-"))
    shutil.copytree(ROOT / "src" / "harness", workspace, dirs_exist_ok=True)
    with FakeOpenAIServer(respond) as fast, FakeOpenAIServer(respond) as smart:
        (home / "harness.toml").write_text(config(fast.base_url, smart.base_url))
        ids = asyncio.run(make_batch(home, workspace, args.runs))
    show(home, "stats")
    for by in ("model", "task-type", "tool"):
        show(home, "cost", "--by", by)
    show(home, "trace", ids[1])
    shutil.rmtree(workspace)


if __name__ == "__main__":
    main()
