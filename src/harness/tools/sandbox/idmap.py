"""A directory of any owner as the sandbox's workspace, through an idmapped bind mount.

As root, commands run as the unprivileged sandbox uid (research/sandbox.md §1), so a project
owned by root, or by anyone but that uid, is not writable from the sandbox; handing it over
with a chown would change the user's files. Instead the thread that starts the command
enters a mount namespace of its own and mounts a clone of the directory there with an
idmapping: the directory's owner and group appear as the sandbox uid and gid, and whatever
the command creates or changes lands on disk owned by that owner and group
(research/sandbox-root-workspace.md). No other process sees the mount; it goes away with the
thread and the command. Files of other owners keep their own ids on disk and count as
"others" for the command's permission checks.

It needs CAP_SYS_ADMIN (root on a normal machine, or a privileged container) and a
filesystem that supports idmapped mounts (ext4, xfs, btrfs, overlayfs from Linux 5.19,
tmpfs from 6.3). Where the kernel refuses, `IdmapRefused` says so with the fix; there is no
fallback to an unsandboxed run.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from harness.errors import ConfigError

__all__ = ["IdMap", "IdmapRefused", "enter_private_mounts", "mount_idmapped", "probe_idmap"]

# Syscall numbers of the new mount API: one table for every architecture since Linux 5.2.
_SYS_OPEN_TREE: Final = 428
_SYS_MOVE_MOUNT: Final = 429
_SYS_MOUNT_SETATTR: Final = 442
_OPEN_TREE_CLONE: Final = 1
_OPEN_TREE_CLOEXEC: Final = os.O_CLOEXEC
_AT_FDCWD: Final = -100
_AT_EMPTY_PATH: Final = 0x1000
_MOVE_MOUNT_F_EMPTY_PATH: Final = 0x4
_MOUNT_ATTR_IDMAP: Final = 0x00100000
_CLONE_NEWNS: Final = 0x00020000
_MS_REC: Final = 0x4000
_MS_SLAVE: Final = 1 << 19
_USERNS_TIMEOUT_S: Final = 5.0

IDMAP_FIX: Final = (
    "run harness as a normal user in this directory, or give the agent a workspace made "
    "with `harness workspace new` (it belongs to the sandbox uid), or move the project to a "
    "filesystem that supports idmapped mounts (ext4, xfs, btrfs; tmpfs from Linux 6.3)"
)
"""What an operator can do when the kernel refuses the idmapped mount."""


class IdmapRefused(ConfigError):
    """The kernel or the filesystem refused to map a directory's owner to the sandbox uid."""


@dataclass(frozen=True, kw_only=True)
class IdMap:
    """Show the owner `uid` and group `gid` of a directory as the sandbox's `to_id`."""

    uid: int
    """The directory's owner on disk."""
    gid: int
    """The directory's group on disk."""
    to_id: int
    """The host uid and gid the sandboxed commands run as."""


class _Mount(ctypes.Structure):
    _fields_ = (
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    )


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str, path: Path | None = None) -> int:
    if result < 0:
        number = ctypes.get_errno()
        where = f" {path}" if path is not None else ""
        raise OSError(number, f"{what}{where}: {os.strerror(number)}")
    return result


_used = threading.local()


def enter_private_mounts() -> None:
    """Give the calling thread a mount namespace of its own that sends nothing back.

    Only this thread, and the processes it starts from now on, see mounts made afterwards.
    Call it only in a thread that exists for one command: the namespace cannot be left.

    Raises:
        OSError: unshare or the propagation change failed (no CAP_SYS_ADMIN).
    """
    if threading.current_thread() is threading.main_thread() or getattr(_used, "done", False):
        raise RuntimeError("enter_private_mounts() must run in a thread made for one command")
    _used.done = True
    libc = _libc()
    _check(libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_SLAVE, None), "mount --make-rslave /")


def mount_idmapped(
    source: Path, target: Path, idmap: IdMap, *, identity: tuple[int, int] | None = None
) -> None:
    """Mount a clone of `source` at `target`, its owner and group shown as `idmap.to_id`.

    Call it after `enter_private_mounts`, so that only this thread's commands see the mount.
    The directory is opened once and cloned through that descriptor; if it is no longer the
    directory that was checked (another device and inode, or another owner: someone swapped
    a component of the path for a link), nothing is mounted.

    Args:
        source: The workspace directory.
        target: An empty directory to mount on.
        idmap: Whose files appear as the sandbox's.
        identity: The (st_dev, st_ino) the directory had when it was checked.

    Raises:
        OSError: The directory changed, or the kernel or filesystem refused (EPERM: no
            CAP_SYS_ADMIN; EINVAL: the filesystem does not support idmapped mounts).
    """
    libc = _libc()
    userns = _userns(idmap)
    directory = os.open(source, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        _check_identity(directory, source, idmap, identity)
        tree = _check(
            libc.syscall(
                _SYS_OPEN_TREE, directory, b"",
                _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC | _AT_EMPTY_PATH,
            ),
            "open_tree",
            source,
        )  # fmt: skip
    finally:
        os.close(directory)
    try:
        attr = _Mount(attr_set=_MOUNT_ATTR_IDMAP, userns_fd=userns)
        _check(
            libc.syscall(
                _SYS_MOUNT_SETATTR, tree, b"", _AT_EMPTY_PATH, ctypes.byref(attr),
                ctypes.sizeof(attr),
            ),
            "mount_setattr(MOUNT_ATTR_IDMAP)",
            source,
        )  # fmt: skip
        _check(
            libc.syscall(
                _SYS_MOVE_MOUNT, tree, b"", _AT_FDCWD, os.fsencode(target),
                _MOVE_MOUNT_F_EMPTY_PATH,
            ),
            "move_mount",
            target,
        )  # fmt: skip
    finally:
        os.close(tree)


def _check_identity(
    directory: int, source: Path, idmap: IdMap, identity: tuple[int, int] | None
) -> None:
    info = os.fstat(directory)
    same = identity is None or (info.st_dev, info.st_ino) == identity
    if not same or (info.st_uid, info.st_gid) != (idmap.uid, idmap.gid):
        raise OSError(errno.ESTALE, f"{source} is no longer the directory that was checked")


_userns_lock = threading.Lock()
_userns_fds: dict[IdMap, int] = {}


def _userns(idmap: IdMap) -> int:
    """A user namespace that maps `idmap.uid`/`gid` to `to_id`; made once per process."""
    with _userns_lock:
        fd = _userns_fds.get(idmap)
        if fd is None:
            fd = _new_userns(idmap)
            _userns_fds[idmap] = fd
        return fd


def _new_userns(idmap: IdMap) -> int:
    # A process must be single-threaded to create a user namespace, and we are not: a child
    # makes it, we write its maps and keep a descriptor, which keeps the namespace alive.
    child = subprocess.Popen(
        ["unshare", "--user", "--", "cat"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin"},
    )
    try:
        _wait_for_new_userns(child.pid)
        Path(f"/proc/{child.pid}/uid_map").write_text(f"{idmap.uid} {idmap.to_id} 1\n")
        Path(f"/proc/{child.pid}/gid_map").write_text(f"{idmap.gid} {idmap.to_id} 1\n")
        return os.open(f"/proc/{child.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        with contextlib.suppress(OSError):
            assert child.stdin is not None
            child.stdin.close()
        child.kill()
        child.wait()


def _wait_for_new_userns(pid: int) -> None:
    ours = os.readlink("/proc/self/ns/user")
    deadline = time.monotonic() + _USERNS_TIMEOUT_S
    while os.readlink(f"/proc/{pid}/ns/user") == ours:
        if time.monotonic() > deadline:
            raise OSError(errno.ETIMEDOUT, "unshare --user did not create a user namespace")
        time.sleep(0.0005)


_probed: dict[tuple[int, IdMap], str | None] = {}
_probe_lock = threading.Lock()


def probe_idmap(source: Path, target: Path, idmap: IdMap) -> None:
    """Check once per filesystem and owner that `source` can be mounted idmapped.

    Runs the mount in a throwaway thread with a private mount namespace, so nothing stays
    mounted anywhere.

    Raises:
        IdmapRefused: The kernel or filesystem refused, with the reason and the fix.
    """
    key = (os.stat(source).st_dev, idmap)
    with _probe_lock:
        if key not in _probed:
            _probed[key] = _try_mount(source, target, idmap)
        problem = _probed[key]
    if problem is not None:
        raise IdmapRefused(
            f"the sandbox cannot give commands the directory {source} (owned by uid "
            f"{idmap.uid}) as their workspace: {problem}. Fix: {IDMAP_FIX}"
        )


def _try_mount(source: Path, target: Path, idmap: IdMap) -> str | None:
    outcome: list[str | None] = []

    def attempt() -> None:
        try:
            enter_private_mounts()
            mount_idmapped(source, target, idmap)
        except OSError as exc:
            outcome.append(_explain(exc))
        else:
            outcome.append(None)

    thread = threading.Thread(target=attempt, name="harness-idmap-probe", daemon=True)
    thread.start()
    thread.join()
    return outcome[0] if outcome else "the idmapped-mount probe failed"


def _explain(exc: OSError) -> str:
    if exc.errno == errno.EPERM:
        return f"{exc.strerror} (idmapped mounts need root with CAP_SYS_ADMIN)"
    if exc.errno == errno.EINVAL:
        return f"{exc.strerror} (this filesystem does not support idmapped mounts)"
    if exc.errno == errno.ENOSYS:
        return f"{exc.strerror} (the kernel is older than 5.12: no idmapped mounts)"
    return str(exc)
