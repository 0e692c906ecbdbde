"""Find out, once per process, whether the bwrap sandbox works here, and how to fix it if not."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Literal

from harness.tools.sandbox.errors import SandboxUnavailable
from harness.tools.sandbox.limits import SandboxLimits
from harness.tools.sandbox.runner import Job, RunSpec
from harness.tools.sandbox.workspace import DEFAULT_UID

__all__ = ["INSTALL_FIX", "NAMESPACES_FIX", "SandboxStatus", "probe_sandbox", "resolve_programs"]

INSTALL_FIX = "install bubblewrap: apt-get install bubblewrap"
"""The fix when bwrap is missing."""
NAMESPACES_FIX = (
    "bwrap cannot create namespaces as an unprivileged user: the kernel or the container "
    "forbids unprivileged user namespaces. Enable them (sysctl user.max_user_namespaces > 0, "
    "kernel.unprivileged_userns_clone=1 where that exists, "
    "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu), or run the harness where "
    "they are allowed (e.g. a container started with a seccomp profile that allows them)"
)
"""The fix when namespaces cannot be created."""

_PROBE_LIMITS = SandboxLimits(wall_s=15.0)
_NAMESPACE_ERRORS = (
    "No permissions to create new namespace",
    "Creating new namespace failed",
    "setting up uid map",
    "unshare failed",
)


@dataclass(frozen=True, kw_only=True)
class SandboxStatus:
    """Whether commands can be sandboxed here."""

    available: bool
    """The smoke test passed: `Sandbox.run` will work."""
    backend: Literal["bwrap", "none"]
    """The sandbox that will be used; "none" when unavailable."""
    detail: str
    """What failed (the smoke test's stderr), or bwrap's version when available."""
    fix: str
    """What an operator should do to make it available; empty when available."""


def probe_sandbox(
    *, bwrap: str | None = None, prlimit: str | None = None, uid: int = DEFAULT_UID
) -> SandboxStatus:
    """Run the CI smoke test (`/bin/true` in a full sandbox) as the sandbox uid; cached.

    Args:
        bwrap: The bwrap executable; found on PATH by default.
        prlimit: The prlimit executable; found on PATH by default.
        uid: The host uid commands run as when the harness runs as root.

    Returns:
        The status; each distinct configuration is probed once per process.
    """
    bwrap, prlimit = resolve_programs(bwrap, prlimit)
    return _probe(bwrap, prlimit, run_as(uid))


def resolve_programs(bwrap: str | None, prlimit: str | None) -> tuple[str, str]:
    """Absolute paths for bwrap and prlimit: those given, else found on PATH."""
    return (
        bwrap or shutil.which("bwrap") or "/usr/bin/bwrap",
        prlimit or shutil.which("prlimit") or "/usr/bin/prlimit",
    )


def run_as(uid: int) -> int | None:
    """The uid to drop to before bwrap: `uid` when running as root, else None (stay)."""
    return uid if os.geteuid() == 0 else None


@functools.cache
def _probe(bwrap: str, prlimit: str, uid: int | None) -> SandboxStatus:
    if not sys.platform.startswith("linux"):
        return _unavailable(f"platform {sys.platform}", "the bwrap sandbox needs Linux")
    for program, fix in ((bwrap, INSTALL_FIX), (prlimit, "install util-linux (prlimit)")):
        if not os.access(program, os.X_OK):
            return _unavailable(f"{program}: not found or not executable", fix)
    spec = RunSpec(
        bwrap=bwrap, prlimit=prlimit, run_as=uid, command="true", workspace=None,
        limits=_PROBE_LIMITS,
    )  # fmt: skip
    try:
        result = Job(spec).run()
    except (SandboxUnavailable, OSError) as exc:
        return _unavailable(str(exc), INSTALL_FIX)
    if result.exit_code == 0:
        return SandboxStatus(available=True, backend="bwrap", detail=_version(bwrap), fix="")
    return _unavailable(result.output.strip(), _fix_for(result.output, uid))


def _unavailable(detail: str, fix: str) -> SandboxStatus:
    return SandboxStatus(available=False, backend="none", detail=detail, fix=fix)


def _fix_for(stderr: str, uid: int | None) -> str:
    if any(error in stderr for error in _NAMESPACE_ERRORS):
        return NAMESPACES_FIX
    who = "the harness's user" if uid is None else f"uid {uid}"
    return (
        f"the bwrap smoke test failed when run as {who}: make bwrap and prlimit executable "
        "by that uid (every parent directory traversable), or see the detail"
    )


def _version(bwrap: str) -> str:
    try:
        done = subprocess.run(
            [bwrap, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "bwrap"
    return done.stdout.strip() or "bwrap"
