"""A HARNESS_HOME that cannot be written: the error says so, names the path and what to do."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HARNESS = str(Path(sys.executable).parent / "harness")


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """An empty directory nobody can write: a read-only tmpfs as root (root ignores modes)."""
    directory = tmp_path / "ro"
    directory.mkdir()
    if os.geteuid() != 0:
        directory.chmod(0o555)
        yield directory
        directory.chmod(0o755)
        return
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(directory)], check=True
    )
    try:
        yield directory
    finally:
        subprocess.run(["umount", str(directory)], check=True)


def harness(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "80"}
    env.pop("HARNESS_STORE", None)
    return subprocess.run([HARNESS, *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    "args",
    [("runs", "list"), ("run", "--model", "openai:x", "--base-url", "http://127.0.0.1:9", "hi")],
)
def test_a_read_only_home_is_named_with_what_to_do(read_only_dir: Path, args: tuple[str]) -> None:
    done = harness(read_only_dir, *args)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "unable to open database file" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert f"HARNESS_HOME {read_only_dir} is read-only" in line
    assert "point HARNESS_HOME (or HARNESS_STORE) elsewhere" in line


def test_a_home_that_cannot_be_created_names_the_read_only_parent(read_only_dir: Path) -> None:
    home = read_only_dir / "home"
    done = harness(home, "runs", "list")
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert f"HARNESS_HOME {home} is read-only (it would be created in {read_only_dir})" in line
