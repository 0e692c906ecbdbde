"""The examples run as a user runs them: a process of their own, against the scripted models."""

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_two_agents_talk_by_messages(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "conversation.py"), "--home", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    planner, sent, received, reviewer, got, answered = done.stdout.splitlines()
    planner_id, reviewer_id = planner.split(":")[0], reviewer.split(":")[0]
    review = "Good plan; write the tests before the migration."
    assert planner.endswith(
        f"Plan revised after the review ({review!r}): 1. tests 2. column 3. migrate."
    )
    assert sent == f"  sent to {reviewer_id}: 1. add the column 2. migrate 3. deploy"
    assert received == f"  received from {reviewer_id}: {review}"
    assert reviewer == f"{reviewer_id}: Reviewed the plan of {planner_id}."
    assert got == f"  received from {planner_id}: 1. add the column 2. migrate 3. deploy"
    assert answered == f"  sent to {planner_id}: {review}"
