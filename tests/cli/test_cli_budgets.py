"""Budgets from the command line and from `[defaults] limits`: a run stops when one is spent."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.testing import FakeOpenAIServer, FakeReply

HARNESS = str(Path(sys.executable).parent / "harness")
LIST = FakeReply.tool_call("list_dir", {"path": "."})


def run(home: Path, base_url: str, *flags: str) -> tuple[int, list[dict[str, Any]], str]:
    """`harness run --json` on a model that lists a directory forever: exit code, events."""
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
    for name in ("HARNESS_MODEL", "HARNESS_STORE"):
        env.pop(name, None)
    args = ["run", "--json", "--tools", "list_dir", "--base-url", base_url, *flags, "look"]
    work = home.parent / "work"  # the workspace: the home may not be the workspace itself
    work.mkdir(exist_ok=True)
    done = subprocess.run(
        [HARNESS, *args], cwd=work, env=env, capture_output=True, text=True, timeout=60
    )
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def configure(home: Path, text: str) -> None:
    home.mkdir(exist_ok=True)
    (home / "harness.toml").write_text(text)


def ended(events: list[dict[str, Any]]) -> dict[str, Any]:
    assert events[-1]["type"] == "run_finished", events[-1]
    return events[-1]["payload"]


def tool_calls(events: list[dict[str, Any]]) -> int:
    return sum(1 for e in events if e["type"] == "tool_completed" and e["payload"]["ok"])


@pytest.mark.parametrize(
    ("flags", "termination"),
    [
        (("--max-tokens", "20"), "budget_tokens"),
        (("--max-tool-calls", "2"), "max_tool_calls"),
        (("--max-cost", "0.01"), "budget_cost"),
        (("--max-seconds", "0.5"), "timeout"),
    ],
)
def test_each_budget_flag_stops_a_run(
    tmp_path: Path, flags: tuple[str, ...], termination: str
) -> None:
    slow = dataclasses.replace(LIST, delay_s=1.0) if "--max-seconds" in flags else LIST
    with FakeOpenAIServer([slow] * 8) as server:
        # $1000 per million tokens: the 15 tokens of one reply cost $0.015.
        configure(
            tmp_path,
            f'[models.priced]\nmodel = "fake"\nbase_url = "{server.base_url}"\n'
            "prices = { input = 1000, output = 1000 }\n",
        )
        code, events, stderr = run(tmp_path, server.base_url, "--model", "priced", *flags)
    assert code == 1, stderr
    assert "Traceback" not in stderr
    assert ended(events)["termination"] == termination


def test_limits_come_from_the_file(tmp_path: Path) -> None:
    configure(tmp_path, "[defaults]\nlimits = { max_tool_calls = 1 }\n")
    with FakeOpenAIServer([LIST] * 8) as server:
        code, events, _ = run(tmp_path, server.base_url, "--model", "openai:fake")
    assert code == 1
    assert ended(events)["termination"] == "max_tool_calls"
    assert tool_calls(events) == 1


def test_flags_win_over_the_file(tmp_path: Path) -> None:
    configure(tmp_path, "[defaults]\nlimits = { max_tool_calls = 1, max_tokens = 1000 }\n")
    with FakeOpenAIServer([LIST] * 8) as server:
        code, events, _ = run(
            tmp_path, server.base_url, "--model", "openai:fake", "--max-tool-calls", "3"
        )
    assert code == 1
    assert ended(events)["termination"] == "max_tool_calls"
    assert tool_calls(events) == 3


def test_a_bad_limit_in_the_file_is_a_clear_error(tmp_path: Path) -> None:
    configure(tmp_path, "[defaults]\nlimits = { max_tokens = 0 }\n")
    code, events, stderr = run(tmp_path, "http://127.0.0.1:9/v1", "--model", "openai:fake")
    assert code == 2
    assert events == []
    assert "key 'defaults.limits.max_tokens'" in stderr
    assert "Traceback" not in stderr
