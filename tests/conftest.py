"""Fixtures shared by the whole suite: a working sandbox and workspaces it can use.

Sandbox tests fail, with the probe's reason, when no sandbox works here: a broken sandbox
must never turn into green skips. A developer on a machine without bubblewrap can opt out
explicitly with HARNESS_ALLOW_NO_SANDBOX=1; those tests then skip with the same reason.
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
    """Processes of the sandbox uid that this test process started and that are still alive.

    Only our own descendants count: other test runs on the same machine (or anything else
    running as nobody) are not ours to judge. The harness is a child subreaper, so a
    sandboxed process whose parent died is re-parented to us and still counts. As another
    user, only our processes inside a nested pid namespace count.
    """
    table = _process_table()
    found: list[str] = []
    for pid, (_, uid, nested, line) in table.items():
        if uid != SANDBOX_UID or not _descends_from(pid, os.getpid(), table):
            continue
        if os.geteuid() != 0 and not nested:
            continue
        found.append(f"{pid} {line}")
    return found


_Row = tuple[int, int, bool, str]


def _process_table() -> dict[int, _Row]:
    """pid -> (ppid, uid, in a nested pid namespace, 'Name State') for every process."""
    table: dict[int, _Row] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text(errors="replace")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        try:
            ppid = int(fields["PPid"])
            uid = int(fields["Uid"].split()[0])
        except (KeyError, ValueError, IndexError):
            continue
        nested = len(fields.get("NSpid", "").split()) >= 2
        line = f"{fields.get('Name', '?').strip()} {fields.get('State', '?').strip()}"
        table[int(entry.name)] = (ppid, uid, nested, line)
    return table


def _descends_from(pid: int, ancestor: int, table: dict[int, _Row]) -> bool:
    seen: set[int] = set()
    while pid in table and pid not in seen:
        if pid == ancestor:
            return True
        seen.add(pid)
        pid = table[pid][0]
    return pid == ancestor


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
        if os.environ.get("HARNESS_ALLOW_NO_SANDBOX") == "1":
            pytest.skip(f"{reason}; skipped because HARNESS_ALLOW_NO_SANDBOX=1")
        pytest.fail(f"{reason}. Set HARNESS_ALLOW_NO_SANDBOX=1 to skip sandbox tests instead.")
    assert sandbox_processes() == [], "sandbox processes were running before the test"
    yield Sandbox()
    assert sandbox_processes() == [], "the sandbox left processes behind"


@pytest.fixture
def workspace() -> Iterator[Path]:
    path = make_workspace()
    yield path
    shutil.rmtree(path)
