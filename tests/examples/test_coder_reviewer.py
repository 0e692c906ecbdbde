"""examples/coder_reviewer.py runs: on its scripted models, and against an OpenAI-compatible
server (the fake one, on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness.testing import FakeOpenAIServer, FakeReply

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "coder_reviewer.py"


def run_example(tmp_path: Path, *args: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--home", str(tmp_path), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_reviewer_reviews_the_coders_run_once_started_by_the_trigger(tmp_path: Path) -> None:
    coder, reviewer, trigger = run_example(tmp_path)
    coder_run = coder.split()[1].rstrip(":")
    assert coder.endswith("Fixed the off-by-one in app/pages.py: range(1, n + 1). Patch saved.")
    assert reviewer.endswith("APPROVED: the loop now reaches the last page.")
    origin = json.loads(trigger.removeprefix("trigger "))
    assert origin["name"] == "review"
    assert origin["source_run_id"] == coder_run
    assert origin["chain"] == ["review"]


def test_the_example_runs_against_an_openai_compatible_server(tmp_path: Path) -> None:
    diff = "-range(1, n)\n+range(1, n + 1)"
    script = [
        FakeReply.tool_call("write_patch", {"path": "app/pages.py", "diff": diff}),
        FakeReply.text("Patched app/pages.py."),
        FakeReply.tool_call("read_patch", {"path": "app/pages.py"}),
        FakeReply.text("APPROVED: it reaches the last page now."),
    ]
    with FakeOpenAIServer(script) as server:
        lines = run_example(tmp_path, "--model", "openai:fake", "--base-url", server.base_url)
        bodies = [r.body for r in server.requests]
    assert lines[0].endswith("Patched app/pages.py.")
    assert lines[1].endswith("APPROVED: it reaches the last page now.")
    reviewer_task = next(m for m in bodies[2]["messages"] if m["role"] == "user")["content"]
    coder_run = lines[0].split()[1].rstrip(":")
    assert reviewer_task == f"Review the work of run {coder_run}: Patched app/pages.py."
    assert "+range(1, n + 1)" in bodies[3]["messages"][-1]["content"]
