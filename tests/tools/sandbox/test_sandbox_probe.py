"""The probe, and failing closed when there is no sandbox."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.errors import ToolError
from harness.tools.sandbox import (
    Sandbox,
    SandboxStatus,
    SandboxUnavailable,
    probe_sandbox,
)
from harness.tools.sandbox.probe import INSTALL_FIX

BOGUS = "/nonexistent/bwrap"


def test_probe_reports_bwrap_here(sandbox: Sandbox) -> None:
    status = sandbox.probe()
    assert status.available
    assert status.backend == "bwrap"
    assert status.detail.startswith("bubblewrap ")
    assert status.fix == ""
    assert probe_sandbox() is probe_sandbox()  # cached


def test_missing_bwrap_is_reported_with_a_fix() -> None:
    status = probe_sandbox(bwrap=BOGUS)
    assert status == SandboxStatus(
        available=False,
        backend="none",
        detail=f"{BOGUS}: not found or not executable",
        fix=INSTALL_FIX,
    )
    assert "apt-get install bubblewrap" in status.fix


def test_a_failing_bwrap_is_reported_with_its_stderr(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        fake = Path("/tmp") / f"fake-bwrap-{os.getpid()}"
    else:
        fake = tmp_path / "fake-bwrap"
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace, likely because' >&2\n"
        "exit 1\n"
    )
    fake.chmod(0o755)
    try:
        status = probe_sandbox(bwrap=str(fake))
    finally:
        fake.unlink()
    assert not status.available
    assert "No permissions to create new namespace" in status.detail
    assert "user namespaces" in status.fix


async def test_run_refuses_to_run_without_a_sandbox(workspace: Path) -> None:
    marker = workspace / "ran"
    with pytest.raises(SandboxUnavailable) as caught:
        await Sandbox(bwrap=BOGUS).run(f"touch {marker}", workspace=workspace)
    assert isinstance(caught.value, ToolError)
    assert caught.value.hint == INSTALL_FIX
    assert BOGUS in caught.value.message
    assert not marker.exists()
