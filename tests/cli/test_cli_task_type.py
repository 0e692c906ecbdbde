"""`harness run --task-type`, and task types in `harness runs list` and `runs show`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness.testing import FakeOpenAIServer, FakeReply

HARNESS = str(Path(sys.executable).parent / "harness")


def harness(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
    for name in ("HARNESS_MODEL", "HARNESS_STORE"):
        env.pop(name, None)
    work = home / "work"
    work.mkdir(exist_ok=True)
    return subprocess.run(
        [HARNESS, *args], cwd=work, env=env, capture_output=True, text=True, timeout=60
    )


def test_a_run_started_with_a_task_type_is_listed_and_shown_with_it(tmp_path: Path) -> None:
    with FakeOpenAIServer([FakeReply.text("done"), FakeReply.text("done")]) as server:
        base = ["run", "--json", "--tools", "none", "--base-url", server.base_url]
        typed = harness(tmp_path, *base, "--model", "openai:f", "--task-type", "refund", "go")
        plain = harness(tmp_path, *base, "--model", "openai:f", "go")
    assert typed.returncode == 0, typed.stderr
    assert plain.returncode == 0, plain.stderr
    events = [json.loads(line) for line in typed.stdout.splitlines()]
    started = next(e for e in events if e["type"] == "run_started")
    assert started["payload"]["task_type"] == "refund"
    run_id = started["run_id"]

    listed = harness(tmp_path, "runs", "list", "--task-type", "refund", "--json")
    assert [json.loads(line)["run_id"] for line in listed.stdout.splitlines()] == [run_id]
    everything = harness(tmp_path, "runs", "list")
    assert len(everything.stdout.splitlines()) == 2
    assert "[refund]" in next(line for line in everything.stdout.splitlines() if run_id in line)
    shown = json.loads(harness(tmp_path, "runs", "show", run_id, "--json").stdout)
    assert shown["task_type"] == "refund"


def test_a_task_type_that_is_no_label_is_refused_with_the_rule(tmp_path: Path) -> None:
    done = harness(tmp_path, "run", "--model", "openai:f", "--task-type", "two words", "go")
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert "--task-type: task type 'two words' is not a label" in said
    assert "1 to 64 letters, digits and . _ : -" in said
    assert not (tmp_path / "harness.db").exists()
    listed = harness(tmp_path, "runs", "list", "--task-type", "a b")
    assert listed.returncode == 2
    assert "--task-type" in listed.stderr
