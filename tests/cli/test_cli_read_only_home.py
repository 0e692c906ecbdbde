"""A HARNESS_HOME that cannot be written: the error says so, names the path and what to do."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HARNESS = str(Path(sys.executable).parent / "harness")


@contextlib.contextmanager
def made_read_only(directory: Path, *, with_store: bool) -> Iterator[Path]:
    """`directory`, made read-only: a tmpfs remounted read-only as root (root ignores modes).

    With `with_store`, a store is created in it first.
    """
    directory.mkdir()
    as_root = os.geteuid() == 0
    if as_root:
        mount = ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(directory)]
        subprocess.run(mount, check=True)
    try:
        if with_store:
            assert harness(directory, "runs", "list").returncode == 0
        if as_root:
            subprocess.run(["mount", "-o", "remount,ro", str(directory)], check=True)
        else:
            directory.chmod(0o555)
        yield directory
    finally:
        if as_root:
            subprocess.run(["umount", str(directory)], check=True)
        else:
            directory.chmod(0o755)


@pytest.fixture(params=[False, True], ids=["empty", "with-a-store"])
def read_only_dir(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    with made_read_only(tmp_path / "ro", with_store=request.param) as directory:
        yield directory


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
