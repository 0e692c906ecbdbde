"""Fixtures shared by the whole suite: a working sandbox and workspaces it can use.

Sandbox tests skip, with the probe's reason, only when bubblewrap is missing and
HARNESS_REQUIRE_SANDBOX is unset; with HARNESS_REQUIRE_SANDBOX=1 (CI) they fail instead.
Workspaces come from `make_workspace`: pytest's `tmp_path` sits under a 0700 directory the
sandbox uid cannot traverse.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.tools.sandbox import Sandbox, SandboxStatus, make_workspace, probe_sandbox
from harness.tools.sandbox.workspace import sandbox_host_uid

SANDBOX_UID = sandbox_host_uid()


def sandbox_processes() -> list[str]:
    """Processes left by sandboxes: any of uid 65534 when we are root.

    As another user, our own processes inside a nested pid namespace.
    """
    found: list[str] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text(errors="replace")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields.get("Uid", "-1 0").split()[0]) != SANDBOX_UID:
            continue
        if os.geteuid() != 0 and len(fields.get("NSpid", "").split()) < 2:
            continue
        found.append(f"{entry.name} {fields.get('Name', '?').strip()} {fields['State'].strip()}")
    return found


@pytest.fixture
def leftovers() -> Callable[[], list[str]]:
    """Lists the processes that sandboxes left behind."""
    return sandbox_processes


@pytest.fixture(scope="session")
def sandbox_status() -> SandboxStatus:
    return probe_sandbox()


@pytest.fixture
def sandbox(sandbox_status: SandboxStatus) -> Iterator[Sandbox]:
    """A working Sandbox; after the test, no process of the sandbox uid may be left."""
    if not sandbox_status.available:
        reason = f"no sandbox: {sandbox_status.detail} (fix: {sandbox_status.fix})"
        if os.environ.get("HARNESS_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"HARNESS_REQUIRE_SANDBOX=1 but {reason}")
        pytest.skip(reason)
    assert sandbox_processes() == [], "sandbox processes were running before the test"
    yield Sandbox()
    assert sandbox_processes() == [], "the sandbox left processes behind"


@pytest.fixture
def workspace() -> Iterator[Path]:
    path = make_workspace()
    yield path
    shutil.rmtree(path)
