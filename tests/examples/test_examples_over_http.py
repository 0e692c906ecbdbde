"""examples/supervisor.py and examples/conversation.py against an OpenAI-compatible server.

The server is the fake one on 127.0.0.1, answering each request from what the request holds
(the agent's instructions say which agent asks), as a real model would: the examples' own
scripted models are not used.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness.testing import FakeOpenAIServer, FakeReply

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SENDER = re.compile(r"\[message from (run_\w+) \(agent \w+\)\]: (.*)", re.DOTALL)


def run_example(tmp_path: Path, name: str, *args: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env["HARNESS_HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _system(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "system")


def _user(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def _results(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def _supervising(body: dict[str, Any]) -> FakeReply:
    if "research one topic" in _system(body):
        return FakeReply.text(f"found: {_user(body)}")
    results = _results(body)
    if not results:
        topics = ("winds", "currents")
        return FakeReply.tool_calls(("researcher", {"task": t}) for t in topics)
    return FakeReply.text(" + ".join(sorted(results)))


def test_the_supervisor_fans_out_over_http(tmp_path: Path) -> None:
    with FakeOpenAIServer(_supervising) as server:
        lines = run_example(
            tmp_path,
            "supervisor.py",
            "--model",
            "openai:fake",
            "--base-url",
            server.base_url,
            "Why do waves break?",
        )
        asked = len(server.requests)
    assert lines[0] == "found: currents + found: winds"
    tree = [line for line in lines[2:] if line.strip()]
    assert "COMPLETED  supervisor  2 steps" in tree[0]
    assert sorted(line.split()[2] for line in tree[1:]) == ["researcher", "researcher"]
    assert all(line.startswith("  run_") and "COMPLETED" in line for line in tree[1:])
    assert asked == 4  # the supervisor twice, each researcher once


def _heard(body: dict[str, Any]) -> re.Match[str] | None:
    """The first message from another run, in a tool's result or delivered at a step's start."""
    texts = (m["content"] or "" for m in body["messages"] if m["role"] in ("user", "tool"))
    return next((found for text in texts if (found := SENDER.search(text))), None)


def _called(body: dict[str, Any], tool: str) -> bool:
    calls = (c for m in body["messages"] for c in m.get("tool_calls") or ())
    return any(c["function"]["name"] == tool for c in calls)


def _conversing(body: dict[str, Any]) -> FakeReply:
    heard = _heard(body)
    if "Wait for a plan" in _system(body):  # the reviewer
        if heard is None:
            assert not _results(body), body["messages"]
            return FakeReply.tool_call("wait_for_message", {"timeout_s": 60})
        if not _called(body, "send_message"):
            return FakeReply.tool_call("send_message", {"to": heard[1], "content": "add tests"})
        return FakeReply.text(f"reviewed the plan of {heard[1]}")
    if not _called(body, "send_message"):  # the planner
        reviewer = _user(body).split()[-1]
        return FakeReply.tool_call("send_message", {"to": reviewer, "content": "add a column"})
    if heard is None:
        assert not _called(body, "wait_for_message"), body["messages"]
        return FakeReply.tool_call("wait_for_message", {"timeout_s": 60})
    return FakeReply.text(f"revised after: {heard[2]}")


def test_two_agents_talk_by_messages_over_http(tmp_path: Path) -> None:
    with FakeOpenAIServer(_conversing) as server:
        lines = run_example(
            tmp_path,
            "conversation.py",
            "--model",
            "openai:fake",
            "--base-url",
            server.base_url,
            "--home",
            str(tmp_path),
        )
    planner = next(i for i, line in enumerate(lines) if line.endswith("revised after: add tests"))
    planner_run = lines[planner].split(":")[0]
    reviewer = next(i for i, line in enumerate(lines) if "reviewed the plan of" in line)
    reviewer_run = lines[reviewer].split(":")[0]
    assert lines[reviewer].endswith(f"reviewed the plan of {planner_run}")
    # each side sent one message and received the other's once
    assert lines.count(f"  sent to {reviewer_run}: add a column") == 1
    assert lines.count(f"  received from {reviewer_run}: add tests") == 1
    assert lines.count(f"  sent to {planner_run}: add tests") == 1
    assert lines.count(f"  received from {planner_run}: add a column") == 1
