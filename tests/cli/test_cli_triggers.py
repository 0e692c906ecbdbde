"""`harness triggers list`: the file's triggers, and their cursors in the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness import Harness
from harness.runtime import load_settings

HARNESS = str(Path(sys.executable).parent / "harness")

CONFIG = """
[agents.coder]
instructions = "You fix bugs."
[agents.reviewer]
instructions = "You review fixes."

[[triggers]]
name = "review"
on = "run_finished"
match = { agent = "coder", termination = ["final_answer", "max_steps"] }
start = "reviewer"
task = "Review run {run_id}: {result}"
"""


def harness(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("HARNESS_STORE", None)
    return subprocess.run(
        [HARNESS, *args], cwd=home, env=env, capture_output=True, text=True, timeout=60
    )


async def test_triggers_list_shows_each_trigger_and_where_its_cursor_stands(
    tmp_path: Path,
) -> None:
    (tmp_path / "harness.toml").write_text(CONFIG)
    listed = harness(tmp_path, "triggers", "list")
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.splitlines()
    assert header.split() == ["NAME", "ON", "MATCH", "START", "CURSOR", "TASK"]
    assert row.split()[:7] == [
        "review",
        "run_finished",
        "agent=coder",
        "termination=final_answer|max_steps",
        "reviewer",
        "not",
        "started",
    ]
    async with Harness(load_settings(tmp_path)):  # a worker: the trigger's cursor is stored
        pass
    (shown,) = [
        json.loads(line)
        for line in harness(tmp_path, "triggers", "list", "--json").stdout.splitlines()
    ]
    assert (shown["name"], shown["source"]) == ("review", "file")
    assert shown["match"] == {"agent": ["coder"], "termination": ["final_answer", "max_steps"]}
    assert shown["task"] == "Review run {run_id}: {result}"
    assert shown["cursor"] is not None


async def test_triggers_added_in_code_are_listed_by_their_cursors(tmp_path: Path) -> None:
    """`Harness.on` triggers live in their process; the list shows their stored cursors
    after the file's triggers, and says where they come from."""
    (tmp_path / "harness.toml").write_text(CONFIG)
    async with Harness(load_settings(tmp_path)) as h:  # a worker with one trigger of its own
        h.on("run_finished", {"agent": "coder"}, start="reviewer", task="again", name="recheck")
        await h.submit("reviewer", "look")  # a submit stores the new trigger's cursor
    rows = [
        json.loads(line)
        for line in harness(tmp_path, "triggers", "list", "--json").stdout.splitlines()
    ]
    assert [(r["name"], r["source"]) for r in rows] == [("review", "file"), ("recheck", "store")]
    assert rows[1]["cursor"] is not None
    table = harness(tmp_path, "triggers", "list").stdout.splitlines()
    assert table[2].split()[:2] == ["recheck", "-"]
    assert "not in harness.toml: added with Harness.on" in table[2]


def test_triggers_list_without_triggers_says_how_to_add_one(tmp_path: Path) -> None:
    listed = harness(tmp_path, "triggers", "list")
    assert listed.returncode == 0, listed.stderr
    assert "no triggers: add a [[triggers]] table to harness.toml" in listed.stdout


def test_a_bad_trigger_in_the_file_is_named_and_exits_2(tmp_path: Path) -> None:
    (tmp_path / "harness.toml").write_text(CONFIG.replace("{result}", "{outcome}"))
    listed = harness(tmp_path, "triggers", "list")
    assert listed.returncode == 2
    said = " ".join(listed.stderr.split())
    assert "key 'triggers.0'" in said
    assert "unknown placeholder {outcome}" in said
