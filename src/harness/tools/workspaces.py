"""The one rule for which directories may be a workspace, for bash and the file tools alike.

A workspace is a directory of the user's: their project, or one made for the agent by
`harness workspace new`. Never `/`, a system directory, a shared top-level one such as
`/tmp` or `/home`, a home directory itself (it holds credentials), or anything inside a
home's dot-directories (`~/.ssh`, `~/.aws`, `~/.config`, ...). Every built-in tool checks the
same rule once, when it is made, so a run that would break it fails at its start with one
message instead of on every call.
"""

from __future__ import annotations

import functools
import pwd
import sys
from pathlib import Path
from typing import Final

from harness.errors import ConfigError

__all__ = ["DEFAULT_WORKSPACE_ROOT", "WorkspaceRefused", "allowed_workspace"]

DEFAULT_WORKSPACE_ROOT: Final = Path("/tmp/harness-workspaces")
"""Where `harness workspace new` makes workspaces; it holds them all, so it is none itself."""

_SYSTEM_TREES: Final = tuple(
    Path(p)
    for p in ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot",
              "/dev", "/proc", "/sys", "/run", "/efi", "/snap", "/var/lib", "/var/log",
              "/var/cache", "/var/spool", "/var/mail", "/var/backups", "/var/run", "/var/lock")
)  # fmt: skip
"""Nothing at or below these is a workspace."""
_SHARED_ROOTS: Final = frozenset(
    Path(p) for p in ("/", "/home", "/tmp", "/var", "/var/tmp", "/opt", "/srv", "/mnt",
                      "/media", "/nonexistent", "/dev/shm")
)  # fmt: skip
"""These themselves are not workspaces, though a directory inside them may be."""
_FIX: Final = (
    "run harness from a project directory of your own (or give --workspace DIR), "
    "or let `harness workspace new` make one for the agent"
)


class WorkspaceRefused(ConfigError):
    """The directory may not be a workspace; the message says why and what to do instead."""


def allowed_workspace(path: str | Path) -> Path:
    """Check `path` against the workspace rule and return its real, absolute path.

    Args:
        path: The directory the tools would work in.

    Returns:
        The directory with symlinks resolved.

    Raises:
        WorkspaceRefused: It does not exist, is not a directory, or is one that no agent
            may work in; the message names the directory, the reason and the fix.
    """
    try:
        real = Path(path).resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise WorkspaceRefused(
            f"the workspace {path} does not exist or cannot be reached: {exc}"
        ) from None
    if not real.is_dir():
        raise WorkspaceRefused(f"the workspace {real} is not a directory")
    reason = _refusal(real)
    if reason is not None:
        raise WorkspaceRefused(f"refusing {real} as a workspace: {reason}. Instead, {_FIX}")
    return real


def _refusal(real: Path) -> str | None:
    if real in _SHARED_ROOTS or real in (DEFAULT_WORKSPACE_ROOT, DEFAULT_WORKSPACE_ROOT / ".idmap"):
        return "it is / or a directory shared by the whole system"
    if any(real == tree or tree in real.parents for tree in _SYSTEM_TREES):
        return "it is a system directory"
    if real in {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}:
        return "it is the Python installation harness runs from"
    twin = _system_twin(real)
    if twin is not None:
        return f"it is the same directory as {twin} (a bind mount of it?)"
    for home in _homes():
        if real in home.parents:
            return f"it contains the home directory {home}, which holds credentials"
        if real == home:
            return "it is a home directory, which holds credentials (.ssh, .aws, ...)"
        if home in real.parents and real.relative_to(home).parts[0].startswith("."):
            return f"it is inside {home}/{real.relative_to(home).parts[0]}, a home's private files"
    return None


def _system_twin(real: Path) -> Path | None:
    """The system directory that `real` is, under another path (a bind mount), if any."""
    info = real.stat()
    return _system_inodes().get((info.st_dev, info.st_ino))


@functools.cache
def _system_inodes() -> dict[tuple[int, int], Path]:
    found: dict[tuple[int, int], Path] = {}
    for path in (*_SYSTEM_TREES, *_SHARED_ROOTS):
        try:
            info = path.stat()
        except OSError:
            continue
        found.setdefault((info.st_dev, info.st_ino), path)
    return found


@functools.cache
def _homes() -> frozenset[Path]:
    """Home directories of this machine's users (and ours), as real paths."""
    found: set[Path] = set()
    candidates = [entry.pw_dir for entry in pwd.getpwall()] + [str(Path.home())]
    for home in candidates:
        try:
            real = Path(home).resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        if real != Path("/") and real.is_dir():
            found.add(real)
    return frozenset(found)
