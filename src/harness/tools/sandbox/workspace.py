"""Workspaces the sandbox uid can use, and reading their files without following symlinks.

When the harness runs as root, bwrap runs as an unprivileged uid and resolves the workspace
path as that uid: every parent must be traversable by it (0711 or 0755), and the workspace
must belong to it. pytest's `tmp_path` lives under `/tmp/pytest-of-root` (0700), so it cannot
be used as a workspace; `make_workspace` creates one under a traversable parent.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ConfigError, ToolError
from harness.tools.sandbox.idmap import IdMap, probe_idmap
from harness.tools.workspaces import DEFAULT_WORKSPACE_ROOT, allowed_workspace

__all__ = [
    "DEFAULT_UID",
    "DEFAULT_WORKSPACE_ROOT",
    "SandboxWorkspace",
    "check_workspace",
    "idmap_mount_point",
    "make_workspace",
    "prepare_workspace",
    "read_workspace_file",
    "sandbox_host_uid",
]

DEFAULT_UID = 65534
"""The host uid (nobody) that sandboxed commands run as when the harness runs as root."""

_PRIVATE = 0o700
_TRAVERSABLE = 0o711
_READ_CHUNK = 65536


def sandbox_host_uid(uid: int = DEFAULT_UID) -> int:
    """The host uid sandboxed commands run as: `uid` for a root harness, else the harness's."""
    return uid if os.geteuid() == 0 else os.geteuid()


def make_workspace(parent: Path | None = None, *, uid: int = DEFAULT_UID) -> Path:
    """Create a fresh, empty workspace that the sandbox uid owns.

    Args:
        parent: Directory to create it in, made 0711 if missing; `/tmp/harness-workspaces`
            by default. It and its parents must be traversable by the sandbox uid.
        uid: The sandbox's host uid when the harness runs as root.

    Returns:
        The new workspace's absolute path.

    Raises:
        ConfigError: The parent is unsafe (not a directory we own, or writable by others)
            or not traversable by the sandbox uid.
    """
    root = _ensure_parent(parent or DEFAULT_WORKSPACE_ROOT)
    workspace = Path(tempfile.mkdtemp(prefix="ws-", dir=root))
    return prepare_workspace(workspace, uid=uid)


def prepare_workspace(path: Path, *, uid: int = DEFAULT_UID) -> Path:
    """Make `path` (created if missing) a workspace: owned by the sandbox uid, mode 0700.

    Existing content is handed to the sandbox uid too, walking by file descriptor so that
    symlinks planted inside are never followed.

    Args:
        path: The workspace directory.
        uid: The sandbox's host uid when the harness runs as root.

    Returns:
        The workspace's absolute path, symlinks resolved.

    Raises:
        ConfigError: `path` is not a directory, or a parent is not traversable.
    """
    path.mkdir(mode=_PRIVATE, exist_ok=True)
    if path.is_symlink():
        raise ConfigError(f"workspace {path} is a symlink: give the real directory")
    real = path.resolve(strict=True)
    if not real.is_dir():
        raise ConfigError(f"workspace {real} is not a directory")
    _refuse_system_directory(real)
    owner = sandbox_host_uid(uid)
    if os.geteuid() == 0:
        _chown_tree(real, owner)
    os.chmod(real, _PRIVATE)
    _check_parents(real, owner)
    return real


_SYSTEM = tuple(
    Path(p)
    for p in ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot", "/dev",
              "/proc", "/sys", "/run", "/var", "/root", "/opt", "/srv", "/snap")
)  # fmt: skip


def _refuse_system_directory(real: Path) -> None:
    """Never hand a system directory, or a top-level one, to the sandbox uid."""
    prefixes = {Path(sys.prefix), Path(sys.base_prefix), Path.home()}
    inside_system = any(real == s or s in real.parents for s in _SYSTEM)
    if len(real.parts) < 3 or inside_system or real in prefixes:
        raise ConfigError(
            f"refusing to make {real} a workspace: it is a system or top-level directory. "
            "Use make_workspace(), or a project directory of its own."
        )


@dataclass(frozen=True, kw_only=True)
class SandboxWorkspace:
    """How a workspace reaches the sandbox: bound as it is, or through an idmapped mount."""

    path: Path
    """The workspace's real path on the host."""
    idmap: IdMap | None = None
    """As root, for a directory the sandbox uid does not own: its owner and group are shown
    to the sandbox as the sandbox uid, and what the command writes lands owned by them."""
    mount_point: Path | None = None
    """Where the idmapped clone is mounted (in the command's own mount namespace)."""
    identity: tuple[int, int] | None = None
    """The directory's (st_dev, st_ino) as checked: the mount is of this directory only."""


def check_workspace(path: Path, *, uid: int = DEFAULT_UID) -> SandboxWorkspace:
    """Check that the sandbox can use `path` as its workspace, and say how.

    The workspace rule (`harness.tools.workspaces`) comes first. Then, as root, a directory
    of the sandbox uid is bound as it is, and one of any other owner through an idmapped
    mount (checked once per filesystem and owner). As another user, the directory must be
    that user's.

    Returns:
        The workspace's real path and how to mount it.

    Raises:
        ConfigError: The rule refuses it, the kernel refuses the idmapped mount
            (`IdmapRefused`, with the fix), or, not as root, it belongs to someone else.
    """
    real = allowed_workspace(path)
    info = real.stat()
    owner = sandbox_host_uid(uid)
    if info.st_uid == owner:
        _check_parents(real, owner)
        return SandboxWorkspace(path=real)
    if os.geteuid() != 0:
        raise ConfigError(
            f"workspace {real} belongs to uid {info.st_uid}, not to you (uid {owner}): "
            "the sandbox runs commands as you, so use a directory of your own"
        )
    idmap = IdMap(uid=info.st_uid, gid=info.st_gid, to_id=uid)
    mount_point = idmap_mount_point()
    probe_idmap(real, mount_point, idmap)
    return SandboxWorkspace(
        path=real, idmap=idmap, mount_point=mount_point, identity=(info.st_dev, info.st_ino)
    )


def idmap_mount_point() -> Path:
    """The empty directory that idmapped workspaces are mounted on, each in its own namespace.

    Under `DEFAULT_WORKSPACE_ROOT`, so that the sandbox uid can traverse to it whatever the
    modes of the workspace's own parents (root's home is 0700).
    """
    point = _ensure_parent(DEFAULT_WORKSPACE_ROOT) / ".idmap"
    with contextlib.suppress(FileExistsError):
        point.mkdir(mode=_TRAVERSABLE)
    info = point.lstat()
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) or info.st_uid != 0:
        raise ConfigError(f"{point} must be a directory of root's (someone may have planted it)")
    return point


def _ensure_parent(parent: Path) -> Path:
    with contextlib.suppress(FileExistsError):
        parent.mkdir(mode=_TRAVERSABLE)
        os.chmod(parent, _TRAVERSABLE)
    info = parent.lstat()
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise ConfigError(f"workspace parent {parent} is not a directory (or is a symlink)")
    if info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise ConfigError(
            f"workspace parent {parent} must belong to uid {os.geteuid()} and be writable "
            "by nobody else (someone may have planted it)"
        )
    return parent.resolve(strict=True)


def _chown_tree(root: Path, uid: int) -> None:
    os.chown(root, uid, uid)
    # fwalk opens each directory relative to its parent's fd and never follows symlinks, so a
    # link swapped in by the sandbox cannot redirect root's chown outside the workspace.
    for _, dirs, files, dir_fd in os.fwalk(root):
        for name in dirs + files:
            os.chown(name, uid, uid, dir_fd=dir_fd, follow_symlinks=False)


def _check_parents(path: Path, uid: int) -> None:
    for parent in path.parents:
        info = parent.stat()
        if info.st_uid == uid:
            allowed = info.st_mode & stat.S_IXUSR
        elif info.st_gid == uid:
            allowed = info.st_mode & stat.S_IXGRP
        else:
            allowed = info.st_mode & stat.S_IXOTH
        if not allowed:
            raise ConfigError(
                f"the sandbox uid {uid} cannot traverse {parent} (mode "
                f"{stat.S_IMODE(info.st_mode):o}): put workspaces under a 0711 or 0755 "
                "directory, e.g. with make_workspace(); pytest's tmp_path does not qualify"
            )


def read_workspace_file(workspace: Path, relative: str, max_bytes: int) -> bytes:
    """Read up to `max_bytes` of a regular file inside `workspace`, following no symlink.

    The sandbox controls the workspace's content: a symlink planted there (say to
    `/etc/shadow`) must never make the harness read a host file on the sandbox's behalf.

    Args:
        workspace: The workspace directory (trusted).
        relative: Path of the file, relative to the workspace, with no `..` component.
        max_bytes: Most bytes returned.

    Returns:
        The first `max_bytes` bytes of the file.

    Raises:
        ToolError: The path leaves the workspace, passes through a symlink, does not exist,
            or is not a regular file.
    """
    parts = _relative_parts(relative)
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            fd = _open_beneath(fd, part, relative, os.O_DIRECTORY)
        fd = _open_beneath(fd, parts[-1], relative, os.O_NONBLOCK)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ToolError(f"{relative!r} is not a regular file", hint="read a regular file")
        return _read_at_most(fd, max_bytes)
    finally:
        os.close(fd)


def _relative_parts(relative: str) -> list[str]:
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    if relative.startswith("/") or ".." in parts or not parts or "\0" in relative:
        raise ToolError(
            f"{relative!r} is not a path inside the workspace",
            hint="give a relative path without '..', e.g. 'out/result.txt'",
        )
    return parts


def _open_beneath(dir_fd: int, name: str, relative: str, flags: int) -> int:
    """Open `name` in `dir_fd` without following a symlink; on success close `dir_fd`."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | flags, dir_fd=dir_fd)
    except OSError as exc:
        raise _refusal(exc, relative) from exc
    os.close(dir_fd)
    return fd


def _refusal(exc: OSError, relative: str) -> ToolError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return ToolError(
            f"refusing to read {relative!r}: the path goes through a symbolic link "
            "or a non-directory",
            hint="symlinks in the workspace are not followed; read the target itself",
        )
    if exc.errno == errno.ENOENT:
        return ToolError(f"{relative!r} does not exist in the workspace", hint="check the path")
    return ToolError(f"cannot read {relative!r}: {exc.strerror}", hint="check the path")


def _read_at_most(fd: int, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    remaining = max_bytes
    while remaining > 0:
        chunk = os.read(fd, min(remaining, _READ_CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
