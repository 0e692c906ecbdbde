"""Escape attempts of research/sandbox.md §3: files, secrets, privileges, host processes.

Each attempt prints a marker only if it succeeded; the `sandbox` fixture then checks that
no process of the sandbox uid is left.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.tools.sandbox import Sandbox, SandboxLimits
from harness.tools.sandbox.workspace import DEFAULT_WORKSPACE_ROOT, sandbox_host_uid

pytestmark = pytest.mark.sandbox

SECRET = "hunter2"


@pytest.fixture
def host_file() -> Iterator[Path]:
    """A host file outside the workspace, at a path the sandbox could guess."""
    path = DEFAULT_WORKSPACE_ROOT / f"host-{uuid.uuid4().hex}"
    path.write_text("original")
    yield path
    path.unlink()


async def test_writes_outside_the_workspace_fail(
    sandbox: Sandbox, workspace: Path, host_file: Path
) -> None:
    script = f"""
    for target in /usr/evil /etc/evil /evil /bin/evil {host_file} /proc/sys/vm/drop_caches; do
        echo pwned 2>/dev/null > "$target" && echo "WROTE $target"
    done
    mkdir /junk 2>/dev/null && echo WROTE /junk
    echo ok > /workspace/inside && echo > /tmp/private && echo WROTE-OK
    """
    result = await sandbox.run(script, workspace=workspace)
    assert "WROTE /" not in result.output
    assert "WROTE-OK" in result.output
    assert host_file.read_text() == "original"
    assert not Path("/usr/evil").exists()
    assert not Path("/evil").exists()
    assert (workspace / "inside").read_text() == "ok\n"


async def test_host_secrets_are_not_readable(sandbox: Sandbox, workspace: Path) -> None:
    assert os.environ["HARNESS_TEST_SECRET"] == SECRET
    script = """
    cat /etc/shadow /root/.bashrc /dev/vda 2>&1
    ls /home /root /sys 2>&1
    dmesg 2>&1 | head -n 1
    echo "--- pid1:"; tr '\\0' '\\n' < /proc/1/environ
    echo "--- all:"; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'
    echo "--- env:"; env
    echo "--- dev:"; ls /dev
    """
    result = await sandbox.run(script, workspace=workspace)
    assert result.exit_code == 0
    assert SECRET not in result.output
    assert "HARNESS_TEST_SECRET" not in result.output
    assert "root:" not in result.output
    pid1 = result.output.split("--- pid1:\n")[1].split("---")[0].split()
    assert sorted(pid1) == ["LANG=C.UTF-8", "PATH=/usr/bin:/bin"]
    assert "/etc/shadow: No such file or directory" in result.output
    assert "vda" not in result.output.split("--- dev:")[1]


async def test_privileges_are_gone(sandbox: Sandbox, workspace: Path) -> None:
    script = """
    grep -E '^(CapEff|CapBnd|CapPrm|NoNewPrivs):' /proc/self/status
    id -u
    mount -t tmpfs none /tmp 2>/dev/null && echo ESCAPED mount
    mount -o remount,bind,rw /usr 2>/dev/null && echo ESCAPED remount
    unshare -U true 2>/dev/null && echo ESCAPED userns
    unshare -Urm true 2>/dev/null && echo ESCAPED userns-root
    su -c id root </dev/null 2>/dev/null && echo ESCAPED su
    cp /usr/bin/id /workspace/suid && chmod 4755 /workspace/suid
    """
    result = await sandbox.run(script, workspace=workspace)
    assert "ESCAPED" not in result.output
    assert "CapEff:\t0000000000000000" in result.output
    assert "CapBnd:\t0000000000000000" in result.output
    assert "NoNewPrivs:\t1" in result.output
    assert "\n1000\n" in result.output
    # The planted setuid file belongs to the unprivileged host uid, never to root.
    assert (workspace / "suid").stat().st_uid == sandbox_host_uid()


async def test_host_processes_cannot_be_signalled(sandbox: Sandbox, workspace: Path) -> None:
    root_victim = subprocess.Popen(["sleep", "600"])
    uid = sandbox_host_uid()
    group = uid if os.geteuid() == 0 else None
    same_uid_victim = subprocess.Popen(["sleep", "600"], user=uid, group=group)
    try:
        script = f"""
        kill -9 {root_victim.pid} {same_uid_victim.pid} 2>/dev/null && echo KILLED
        kill -9 -1 2>/dev/null
        echo "processes: $(ps -e --no-headers | wc -l)"
        """
        result = await sandbox.run(script, workspace=workspace)
        assert "KILLED" not in result.output
        assert root_victim.poll() is None
        assert same_uid_victim.poll() is None
    finally:
        for victim in (root_victim, same_uid_victim):
            victim.kill()
            victim.wait()


async def test_files_created_inside_belong_to_the_sandbox_uid(
    sandbox: Sandbox, workspace: Path
) -> None:
    result = await sandbox.run("mkdir -p made/deep && echo x > made/deep/f", workspace=workspace)
    assert result.exit_code == 0
    for path in (workspace / "made", workspace / "made" / "deep" / "f"):
        assert path.stat().st_uid == sandbox_host_uid()


async def test_disk_fill_is_stopped_by_fsize(sandbox: Sandbox, workspace: Path) -> None:
    limits = SandboxLimits(fsize_bytes=16 << 20, wall_s=20)
    script = "dd if=/dev/zero of=/workspace/big bs=1M count=200 2>&1; echo rc=$?"
    result = await sandbox.run(script, workspace=workspace, limits=limits)
    assert "rc=153" in result.output  # 128 + SIGXFSZ
    assert (workspace / "big").stat().st_size == 16 << 20


async def test_disk_fill_is_stopped_by_the_tmp_size(sandbox: Sandbox, workspace: Path) -> None:
    limits = SandboxLimits(fsize_bytes=256 << 20, tmp_bytes=32 << 20, wall_s=20)
    script = "dd if=/dev/zero of=/tmp/fill bs=1M count=100 2>&1; echo rc=$?; du -m /tmp/fill"
    result = await sandbox.run(script, workspace=workspace, limits=limits)
    assert "No space left on device" in result.output
    assert "rc=1" in result.output
    assert result.output.rstrip().endswith("32\t/tmp/fill")
