"""Coder + reviewer by trigger: a reviewer starts on every run the coder finishes.

    python examples/coder_reviewer.py                      # scripted models, no server
    python examples/coder_reviewer.py --model openai:MODEL --base-url http://127.0.0.1:8080/v1

The coder writes a patch with a tool; a trigger (`Harness.on("run_finished", ...)`) starts
the reviewer on each of the coder's finished runs, with the coder's answer in its task;
the reviewer reads the patch and gives its verdict. Everything is kept in a durable store
(a scratch directory unless `--home` names one): stop the program after the coder
finished, start it again, and the review still happens, once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path

from harness import Agent, Harness, Message, ModelRequest, tool
from harness.gateway.scripted import FunctionModel, call, reply
from harness.runtime import Settings

PATCHES: dict[str, str] = {}
"""The patches written, by file: the coder's tool writes, the reviewer's reads."""


@tool(side_effects="idempotent")
def write_patch(path: str, diff: str) -> str:
    """Save the patch `diff` of the file `path` (a unified diff)."""
    PATCHES[path] = diff
    return f"saved the patch of {path} ({len(diff.splitlines())} lines)"


@tool(side_effects="none")
def read_patch(path: str) -> str:
    """The patch saved for the file `path`."""
    return PATCHES.get(path, f"no patch for {path}")


def _scripted_coder(request: ModelRequest) -> Message:
    if request.messages[-1].role == "tool":
        return reply("Fixed the off-by-one in app/pages.py: range(1, n + 1). Patch saved.")
    diff = "-    for page in range(1, n):\n+    for page in range(1, n + 1):"
    return reply(None, call("write_patch", {"path": "app/pages.py", "diff": diff}))


def _scripted_reviewer(request: ModelRequest) -> Message:
    last = request.messages[-1]
    if last.role != "tool":
        return reply(None, call("read_patch", {"path": "app/pages.py"}))
    verdict = "APPROVED" if "n + 1" in (last.content or "") else "CHANGES REQUESTED"
    return reply(f"{verdict}: the loop now reaches the last page.")


def agents(model: str | None) -> tuple[Agent, Agent]:
    """The coder and the reviewer: on `model`, or on scripted models when it is `None`."""
    coder = Agent(
        name="coder",
        model=model or FunctionModel(_scripted_coder),
        instructions="You fix bugs. Save every change with write_patch, then say what you did.",
        tools=[write_patch],
    )
    reviewer = Agent(
        name="reviewer",
        model=model or FunctionModel(_scripted_reviewer),
        instructions="You review patches: read it with read_patch, then answer APPROVED or "
        "CHANGES REQUESTED with one sentence why.",
        tools=[read_patch],
    )
    return coder, reviewer


async def main(home: Path, model: str | None, base_url: str | None) -> None:
    """Run the coder once, and print its answer and the review the trigger started."""
    coder, reviewer = agents(model)
    h = Harness(Settings(home=home), agents=(coder, reviewer), base_url=base_url)
    h.on(
        "run_finished",
        {"agent": "coder", "complete": True},
        start=reviewer,
        task="Review the work of run {run_id}: {result}",
        name="review",
    )
    async with h:
        done = await h.run(coder, "Pages are missing from the export: fix app/pages.py")
        print(f"coder    {done.run_id}: {done.output}")
        review = await _review_of(h, done.run_id)
        result = await h.wait(review, timeout=120)
        print(f"reviewer {review}: {result.output}")
        record = await h.get(review)
        print("trigger ", json.dumps(record.metadata["trigger"]))


async def _review_of(h: Harness, coder_run: str) -> str:
    """The reviewer run the trigger started for `coder_run`."""
    async with asyncio.timeout(60):
        while True:
            for run in await h.list(agent="reviewer", limit=20):
                if run.metadata.get("trigger", {}).get("source_run_id") == coder_run:
                    return run.run_id
            await asyncio.sleep(0.05)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model profile or openai:MODEL (default: scripted)")
    parser.add_argument("--base-url", help="the OpenAI-compatible server of --model")
    parser.add_argument("--home", type=Path, help="HARNESS_HOME (default: a scratch directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        asyncio.run(main(args.home or Path(scratch), args.model, args.base_url))
