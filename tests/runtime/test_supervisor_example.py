"""examples/supervisor.py runs against the scripted models: fan-out to researchers, gather."""

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "supervisor.py"


def test_the_supervisor_example_gathers_its_researchers(tmp_path: Path) -> None:
    env = {**os.environ, "HARNESS_HOME": str(tmp_path)}
    for name in ("HARNESS_STORE", "HARNESS_MODEL"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "How do tides work?"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Tides, in short:"
    assert lines[1:4] == [
        "- Notes on 'the moon's pull in one sentence'.",
        "- Notes on 'the sun's pull in one sentence'.",
        "- Notes on 'the shape of coasts in one sentence'.",
    ]
    tree = [line for line in lines[5:] if line.strip()]
    assert "COMPLETED  supervisor  2 steps" in tree[0]
    assert [line.startswith("  run_") and "COMPLETED  researcher" in line for line in tree[1:]] == [
        True
    ] * 3
