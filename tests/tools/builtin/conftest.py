"""Helpers for tests that start real processes."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def is_alive(pid: int) -> bool:
    """Whether `pid` runs; a zombie waiting for its reaper counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def is_gone_soon(pid: int, within_s: float = 3.0) -> bool:
    """Whether `pid` stops running within `within_s` (killed processes are reaped async)."""
    deadline = time.monotonic() + within_s
    while is_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def pid_file(tmp_path: Path) -> Iterator[Path]:
    """A file a command writes a background pid to; any pid still alive is killed after."""
    path = tmp_path / "pid"
    yield path
    if path.exists():
        for line in path.read_text().split():
            if line.isdigit() and is_alive(int(line)):
                os.kill(int(line), 9)


@pytest.fixture
def read_pids(pid_file: Path) -> Callable[[], list[int]]:
    def read() -> list[int]:
        return [int(word) for word in pid_file.read_text().split()]

    return read


@pytest.fixture
def alive() -> Callable[[int], bool]:
    return is_alive


@pytest.fixture
def gone_soon() -> Callable[[int], bool]:
    return is_gone_soon
