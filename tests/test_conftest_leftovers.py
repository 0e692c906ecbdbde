"""The leftover-process check of tests/conftest.py counts this test run's processes only."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from tests.conftest import SANDBOX_UID, _descends_from, sandbox_processes


def test_descent_follows_parents_and_stops_at_cycles() -> None:
    table = {
        10: (1, 0, False, "pytest R"),
        11: (10, 65534, False, "bwrap S"),
        12: (11, 65534, False, "bash S"),
        20: (1, 65534, False, "someone-else S"),
        30: (31, 65534, False, "loop S"),
        31: (30, 65534, False, "loop S"),
    }
    assert _descends_from(12, 10, table)
    assert _descends_from(11, 10, table)
    assert not _descends_from(20, 10, table)
    assert not _descends_from(30, 10, table)


@pytest.mark.skipif(os.geteuid() != 0, reason="starting a process as another uid needs root")
def test_a_process_of_the_sandbox_uid_we_started_is_counted_until_it_ends() -> None:
    child = subprocess.Popen(
        ["setpriv", f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups",
         "sleep", "30"]
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while not any(line.startswith(f"{child.pid} ") for line in sandbox_processes()):
            assert time.monotonic() < deadline, "the child never showed up as uid 65534"
            time.sleep(0.01)
    finally:
        child.kill()
        child.wait()
    assert all(not line.startswith(f"{child.pid} ") for line in sandbox_processes())
