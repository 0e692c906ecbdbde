"""`harness runs tree RUN` and `harness runs events RUN --tree [--follow]`, in a real process."""

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import Harness
from harness.runtime import Settings
from harness.runtime.children import child_run_id

sys.path.insert(0, str(Path(__file__).parents[1] / "runtime" / "processes"))
import tree_agents
from tree_agents import RESEARCHER_REPLY_USD, SUPERVISOR_REPLY_USD, supervisor

HARNESS = str(Path(sys.executable).parent / "harness")


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("HARNESS_STORE", None)
    return subprocess.run([HARNESS, *args], env=env, capture_output=True, text=True, timeout=60)


async def _tree(home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(tree_agents, "LEDGER", home / "ledger")
    async with Harness(Settings(home=home)) as h:
        return (await h.run(supervisor(), "survey")).run_id


async def test_the_tree_shows_state_agent_steps_and_cost_of_each_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = await _tree(tmp_path, monkeypatch)
    child = child_run_id(root, "fan-3")
    done = cli(tmp_path, "runs", "tree", child, "--json")  # any run of the tree: from its root
    assert done.returncode == 0, done.stderr
    tree = json.loads(done.stdout)
    assert (tree["run_id"], tree["agent"], tree["state"], tree["steps"]) == (
        root,
        "supervisor",
        "COMPLETED",
        2,
    )
    assert tree["cost_usd"] == 2 * SUPERVISOR_REPLY_USD
    assert tree["total_cost_usd"] == 2 * SUPERVISOR_REPLY_USD + 20 * RESEARCHER_REPLY_USD
    assert len(tree["children"]) == 10
    assert {(c["agent"], c["state"], c["steps"], c["depth"]) for c in tree["children"]} == {
        ("researcher", "COMPLETED", 2, 1)
    }
    drawn = cli(tmp_path, "runs", "tree", root)
    assert drawn.returncode == 0, drawn.stderr
    lines = drawn.stdout.splitlines()
    assert lines[0].startswith(f"{root}  COMPLETED  supervisor  2 steps  $0.5 (tree $3.00)")
    assert sum("researcher  2 steps  $0.25" in line for line in lines) == 10
    assert any(line.lstrip("│├└─ ").startswith(child) for line in lines)


async def test_tree_events_interleave_the_runs_by_time_and_name_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = await _tree(tmp_path, monkeypatch)
    done = cli(tmp_path, "runs", "events", root, "--tree", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert {e["run_id"] for e in events} == {root} | {
        child_run_id(root, f"fan-{i}") for i in range(10)
    }
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
    assert sum(e["type"] == "child_started" for e in events) == 10
    plain = cli(tmp_path, "runs", "events", root, "--tree")
    first = plain.stdout.splitlines()[0].split()
    assert first[:4] == [root, "supervisor", "1", first[3]]


async def test_tree_events_follow_a_tree_until_every_run_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tree_agents, "LEDGER", tmp_path / "ledger")
    monkeypatch.setattr(tree_agents, "LATENCY_S", 1.0)  # it follows a tree still growing
    env = {**os.environ, "HARNESS_HOME": str(tmp_path), "NO_COLOR": "1"}
    env.pop("HARNESS_STORE", None)
    async with Harness(Settings(home=tmp_path)) as h:
        root = await h.submit(supervisor(), "survey")
        follower = await asyncio.create_subprocess_exec(
            HARNESS, "runs", "events", root, "--tree", "--follow", "--json",
            env=env, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        await h.wait(root, timeout=60)
        out, _ = await asyncio.wait_for(follower.communicate(), timeout=30)
        stored = await h.store.list_runs(root_run_id=root, limit=None)
    events = [json.loads(line) for line in out.decode().splitlines()]
    assert follower.returncode == 0
    finished = {e["run_id"] for e in events if e["type"] == "run_finished"}
    assert finished == {root} | {r.run_id for r in stored}
