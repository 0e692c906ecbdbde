"""Agents defined in harness.toml or by entry points: `harness run --agent`, `agents`, a worker."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from harness.core.states import TERMINAL_STATES
from harness.store import open_store
from harness.testing import FakeOpenAIServer, FakeReply

HARNESS = str(Path(sys.executable).parent / "harness")

TOOLS = '''
from harness import tool

@tool(side_effects="none")
def lookup_order(order_id: str) -> str:
    """Look up an order by its id."""
    return f"order {order_id}: shipped on Monday"
'''

ENTRY_AGENT = """
from harness.agent.spec import AgentSpec

def helper():
    return AgentSpec(name="helper", model="openai:helper-model", instructions="I help.")
"""


def setup(home: Path, base_url: str) -> dict[str, str]:
    site = home / "site"
    site.mkdir(parents=True)
    (site / "orders_tools.py").write_text(TOOLS)
    (site / "my_agents.py").write_text(ENTRY_AGENT)
    dist = site / "my_agents-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-agents\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[harness.agents]\nhelper = my_agents:helper\n")
    (home / "support.md").write_text("You answer customers' questions about orders.\n")
    (home / "harness.toml").write_text(
        f"""
[models.fast]
model = "support-model"
base_url = "{base_url}"

[agents.support]
description = "Answers questions about orders"
model = "fast"
instructions_file = "support.md"
tools = ["orders_tools:lookup_order"]
limits = {{ max_steps = 5 }}
"""
    )
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
    for name in ("HARNESS_MODEL", "HARNESS_STORE"):
        env.pop(name, None)
    env["PYTHONPATH"] = str(site)
    return env


def harness(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HARNESS, *args],
        cwd=env["HARNESS_HOME"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def script() -> list[FakeReply]:
    called = FakeReply.tool_call("lookup_order", {"order_id": "42"})
    return [called, FakeReply.text("Shipped Monday.")]


def test_an_agent_of_the_file_runs_by_name_with_its_instructions_and_python_tool(
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer(script()) as server:
        env = setup(tmp_path, server.base_url)
        done = harness(env, "run", "--json", "--agent", "support", "where is order 42?")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    started = next(e for e in events if e["type"] == "run_started")
    assert started["payload"]["agent"] == "support"
    assert started["payload"]["max_steps"] == 5
    first, second = (r.body for r in server.requests if r.path.endswith("/chat/completions"))
    assert first["model"] == "support-model"
    assert first["messages"][0] == {
        "role": "system",
        "content": "You answer customers' questions about orders.",
    }
    assert next(t["function"]["name"] for t in first["tools"]) == "lookup_order"
    assert "order 42: shipped on Monday" in second["messages"][-1]["content"]


def test_agents_list_and_show_name_the_file_and_entry_point_agents(tmp_path: Path) -> None:
    env = setup(tmp_path, "http://127.0.0.1:9/v1")
    listed = harness(env, "agents", "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["NAME", "SOURCE", "MODEL", "STRATEGY", "TOOLS", "DESCRIPTION"]
    support = ["support", "harness.toml", "fast", "react", "orders_tools:lookup_order"]
    assert lines[1].split()[:5] == support
    assert lines[2].split()[:2] == ["helper", "entry"]
    shown = json.loads(harness(env, "agents", "show", "support", "--json").stdout)
    assert shown["model"] == {"value": "fast", "source": "agents.support.model"}
    assert shown["limits.max_steps"] == {"value": 5, "source": "agents.support.limits.max_steps"}
    assert shown["tools"]["value"] == ["orders_tools:lookup_order"]
    unknown = harness(env, "agents", "show", "nobody")
    assert unknown.returncode == 2
    assert "no agent named 'nobody' (known: helper, support)" in " ".join(unknown.stderr.split())


def test_an_entry_point_agent_runs_by_name(tmp_path: Path) -> None:
    with FakeOpenAIServer([FakeReply.text("helped")]) as server:
        env = setup(tmp_path, server.base_url)
        done = harness(env, "run", "--agent", "helper", "--base-url", server.base_url, "help")
    assert done.returncode == 0, done.stderr
    body = server.requests[-1].body
    assert body["model"] == "helper-model"
    assert body["messages"][0]["content"] == "I help."


def test_a_file_only_agent_runs_in_a_worker_of_another_process(tmp_path: Path) -> None:
    with FakeOpenAIServer(script()) as server:
        env = setup(tmp_path, server.base_url)
        queued = harness(env, "run", "--detach", "--agent", "support", "where is order 42?")
        assert queued.returncode == 0, queued.stderr
        run_id = queued.stdout.strip()
        shown = json.loads(harness(env, "runs", "show", run_id, "--json").stdout)
        assert shown["state"] == "PENDING"
        worker = subprocess.Popen(
            [HARNESS, "worker"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL
        )
        try:
            shown = wait_for_end(env, tmp_path, run_id)
        finally:
            worker.send_signal(signal.SIGINT)
            worker.wait(timeout=30)
    assert (shown["state"], shown["result"]) == ("COMPLETED", "Shipped Monday.")
    assert "agent" not in asyncio.run(stored_metadata(tmp_path, run_id))  # found by name
    first = server.requests[0].body
    assert next(t["function"]["name"] for t in first["tools"]) == "lookup_order"
    assert first["messages"][0]["content"] == "You answer customers' questions about orders."


async def stored_metadata(home: Path, run_id: str) -> dict[str, object]:
    async with await open_store(home / "harness.db") as store:
        record = await store.get_run(run_id)
        assert record is not None
        return dict(record.metadata)


def wait_for_end(env: dict[str, str], home: Path, run_id: str) -> dict[str, object]:
    """`harness runs show --json` of the run, once the store says it ended.

    The wait reads the store in this process; spawning `harness runs show` for every poll
    took CPU from the worker that runs the run.
    """
    asyncio.run(until_ended(home, run_id))
    return json.loads(harness(env, "runs", "show", run_id, "--json").stdout)


async def until_ended(home: Path, run_id: str) -> None:
    async with asyncio.timeout(60), await open_store(home / "harness.db") as store:
        while True:
            record = await store.get_run(run_id)
            if record is not None and record.state in TERMINAL_STATES:
                return
            await asyncio.sleep(0.1)


def test_flags_of_the_ad_hoc_agent_are_refused_with_a_named_agent(tmp_path: Path) -> None:
    env = setup(tmp_path, "http://127.0.0.1:9/v1")
    done = harness(env, "run", "--agent", "support", "--tools", "bash", "go")
    assert done.returncode == 2
    assert "--tools: agent 'support' brings its own tools" in " ".join(done.stderr.split())
    missing = harness(env, "run", "--agent", "ghost", "go")
    assert missing.returncode == 2
    assert "--agent: no agent named 'ghost'" in " ".join(missing.stderr.split())
