"""Workspaces the sandbox uid can use, and reading their files without following symlinks."""

from __future__ import annotations

import os
import shutil
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.errors import ConfigError, ToolError
from harness.tools.sandbox import make_workspace, prepare_workspace, read_workspace_file
from harness.tools.sandbox.idmap import IdMap
from harness.tools.sandbox.workspace import SandboxWorkspace, check_workspace, sandbox_host_uid

SANDBOX_UID = sandbox_host_uid()

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop happens only as root")


@pytest.fixture
def parent(workspace: Path) -> Iterator[Path]:
    """A path that does not exist yet, in a directory the sandbox uid can traverse."""
    path = workspace.parent / f"parent-{uuid.uuid4().hex}"
    yield path
    if path.is_symlink():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def test_make_workspace_belongs_to_the_sandbox_uid(workspace: Path) -> None:
    info = workspace.stat()
    assert info.st_uid == SANDBOX_UID
    assert stat.S_IMODE(info.st_mode) == 0o700
    assert stat.S_IMODE(workspace.parent.stat().st_mode) & 0o001
    assert check_workspace(workspace) == SandboxWorkspace(path=workspace)


def test_make_workspace_creates_a_traversable_parent(parent: Path) -> None:
    workspace = make_workspace(parent)
    assert workspace.parent == parent
    assert stat.S_IMODE(parent.stat().st_mode) == 0o711


def test_a_parent_writable_by_others_is_refused(parent: Path) -> None:
    parent.mkdir(mode=0o777)
    os.chmod(parent, 0o777)
    with pytest.raises(ConfigError, match="planted"):
        make_workspace(parent)


def test_a_symlinked_parent_is_refused(parent: Path) -> None:
    parent.symlink_to("/etc")
    with pytest.raises(ConfigError, match="symlink"):
        make_workspace(parent)


@ROOT_ONLY
def test_pytest_tmp_path_cannot_be_a_workspace(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot traverse"):
        prepare_workspace(tmp_path / "ws")


@ROOT_ONLY
def test_prepare_hands_existing_content_over_without_following_links(parent: Path) -> None:
    victim = parent.parent / f"victim-{os.getpid()}"
    victim.write_text("root's")
    try:
        (parent / "src").mkdir(parents=True)
        (parent / "src" / "a.py").write_text("x")
        (parent / "link").symlink_to(victim)
        assert prepare_workspace(parent) == parent
        assert (parent / "src" / "a.py").stat().st_uid == SANDBOX_UID
        assert (parent / "link").lstat().st_uid == SANDBOX_UID
        assert victim.stat().st_uid == 0
    finally:
        victim.unlink()


@ROOT_ONLY
def test_as_root_a_workspace_of_another_owner_is_mounted_idmapped(parent: Path) -> None:
    parent.mkdir(mode=0o755)
    os.chown(parent, 1234, 5678)
    mount = check_workspace(parent)
    assert mount.path == parent
    assert mount.idmap == IdMap(uid=1234, gid=5678, to_id=SANDBOX_UID)
    assert mount.mount_point is not None
    assert (parent.stat().st_uid, parent.stat().st_gid) == (1234, 5678)  # nothing handed over


def test_read_workspace_file(workspace: Path) -> None:
    (workspace / "out").mkdir()
    (workspace / "out" / "r.txt").write_bytes(b"0123456789")
    assert read_workspace_file(workspace, "out/r.txt", 100) == b"0123456789"
    assert read_workspace_file(workspace, "./out//r.txt", 4) == b"0123"


@pytest.mark.parametrize("relative", ["../etc/passwd", "/etc/passwd", "out/../../x", "", "."])
def test_read_refuses_paths_leaving_the_workspace(workspace: Path, relative: str) -> None:
    with pytest.raises(ToolError, match="not a path inside the workspace"):
        read_workspace_file(workspace, relative, 100)


def test_read_refuses_symlinks_anywhere_in_the_path(workspace: Path) -> None:
    (workspace / "result.txt").symlink_to("/etc/shadow")
    (workspace / "etc").symlink_to("/etc")
    for relative in ("result.txt", "etc/shadow", "etc/passwd"):
        with pytest.raises(ToolError, match="symbolic link") as caught:
            read_workspace_file(workspace, relative, 100)
        assert caught.value.hint


def test_read_refuses_fifos_and_directories_and_missing_files(workspace: Path) -> None:
    os.mkfifo(workspace / "fifo")
    (workspace / "dir").mkdir()
    for relative in ("fifo", "dir"):
        with pytest.raises(ToolError, match="not a regular file"):
            read_workspace_file(workspace, relative, 100)
    with pytest.raises(ToolError, match="does not exist"):
        read_workspace_file(workspace, "missing", 100)


@ROOT_ONLY
@pytest.mark.parametrize("target", ["/etc", "/usr/share", "/tmp", "/", "/var/lib"])
def test_system_directories_are_never_handed_over(target: str) -> None:
    before = os.stat(target)
    with pytest.raises(ConfigError, match="refusing to make"):
        prepare_workspace(Path(target))
    after = os.stat(target)
    assert (after.st_uid, after.st_mode) == (before.st_uid, before.st_mode)


@ROOT_ONLY
def test_a_symlink_to_a_system_directory_is_refused(parent: Path) -> None:
    parent.symlink_to("/etc")
    with pytest.raises(ConfigError, match="is a symlink"):
        prepare_workspace(parent)
    assert os.stat("/etc").st_uid == 0
