"""The leftover-process check of tests/conftest.py sees the sandbox uid's processes we start."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable

import pytest


@pytest.mark.skipif(os.geteuid() != 0, reason="starting a process as another uid needs root")
def test_a_process_of_the_sandbox_uid_we_started_is_counted_until_it_ends(
    leftovers: Callable[[], list[str]],
) -> None:
    child = subprocess.Popen(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sleep", "30"]
    )
    try:
        deadline = time.monotonic() + 10
        while not any(line.startswith(f"{child.pid} ") for line in leftovers()):
            assert time.monotonic() < deadline, "the child never showed up as uid 65534"
            time.sleep(0.01)
    finally:
        child.kill()
        child.wait()
    assert all(not line.startswith(f"{child.pid} ") for line in leftovers())
