"""The CLI, unchanged, on the Temporal backend: one line of harness.toml switches it.

In a user's project directory: `harness run --detach` stores a run and starts its workflow,
`harness worker` (now a Temporal worker) executes it, `harness runs show/events` read it,
and `harness cancel` from another terminal stops a run whose model call is in flight. Real
processes, a real dev server; the model is a fake OpenAI-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.testing import FakeOpenAIServer, FakeReply

HARNESS = str(Path(sys.executable).parent / "harness")


def _answers(body: dict[str, Any]) -> FakeReply:
    task = next(m["content"] for m in body["messages"] if m["role"] == "user")
    reply = FakeReply.text(f"answered: {task}")
    # "slow" holds the model call long enough for a cancel from another terminal
    return dataclasses.replace(reply, delay_s=30.0) if "slow" in task else reply


@pytest.fixture
def project(tmp_path: Path, temporal_address: str, task_queue: str) -> Iterator[Path]:
    """A user's project whose harness.toml puts runs on Temporal, its model a fake server."""
    with FakeOpenAIServer(_answers) as server:
        home = tmp_path / "project" / ".harness"
        home.mkdir(parents=True)
        (home / "harness.toml").write_text(
            f"""
[runtime]
backend = "temporal"
temporal_address = "{temporal_address}"
task_queue = "{task_queue}"

[models.fake]
model = "fake"
base_url = "{server.base_url}"

[agents.helper]
model = "fake"
instructions = "Answer."
tools = []
"""
        )
        yield home.parent


def harness(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    return subprocess.run(
        [HARNESS, *args], cwd=project, env=env, capture_output=True, text=True, timeout=60
    )


def shown(project: Path, run_id: str) -> dict[str, Any]:
    done = harness(project, "runs", "show", run_id, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def until(project: Path, run_id: str, *states: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while (run := shown(project, run_id))["state"] not in states:
        assert time.monotonic() < deadline, run
        time.sleep(0.2)
    return run


def test_detach_worker_runs_and_cancel_from_the_cli(project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    queued = harness(project, "run", "--detach", "--agent", "helper", "what is 2+2")
    held = harness(project, "run", "--detach", "--agent", "helper", "slow question")
    assert queued.returncode == 0, queued.stderr
    assert held.returncode == 0, held.stderr
    first, second = queued.stdout.split()[-1], held.stdout.split()[-1]
    assert shown(project, first)["state"] == "PENDING"  # no worker yet

    worker = subprocess.Popen(
        [HARNESS, "worker"],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        done = until(project, first, "COMPLETED", "FAILED")
        until(project, second, "RUNNING")
        events = harness(project, "runs", "events", second, "--json")
        assert "model_called" in [json.loads(line)["type"] for line in events.stdout.splitlines()]
        cancelled = harness(project, "cancel", second, "--reason", "too slow")
        assert cancelled.returncode == 0, cancelled.stderr
        stopped = until(project, second, "CANCELLED")
        listed = harness(project, "runs", "list", "--json")
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=30)
    assert done["state"] == "COMPLETED", done
    assert done["result"] == "answered: what is 2+2"
    assert stopped["termination"] == "cancelled"
    ids = {json.loads(line)["run_id"] for line in listed.stdout.splitlines()}
    assert {first, second} <= ids
    first_events = harness(project, "runs", "events", first, "--json").stdout.splitlines()
    seqs = [json.loads(line)["seq"] for line in first_events]
    assert seqs == list(range(1, len(seqs) + 1))
    assert json.loads(first_events[-1])["type"] == "run_finished"
