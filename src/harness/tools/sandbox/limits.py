"""Resource limits of one sandboxed command, and the `prlimit` prefix that applies them."""

from __future__ import annotations

from dataclasses import dataclass, fields

from harness.errors import ConfigError

__all__ = ["DEFAULT_LIMITS", "SandboxLimits", "prlimit_argv"]

_KIB = 1024
_MIB = 1024 * _KIB
_GIB = 1024 * _MIB


@dataclass(frozen=True, kw_only=True)
class SandboxLimits:
    """Limits for one command run in the sandbox.

    rlimits apply per process, so the worst-case memory of one call is `nproc * data_bytes`.
    The wall-clock timeout and the output cap are enforced by the harness, not the kernel.
    """

    cpu_s: int = 20
    """CPU seconds per process (RLIMIT_CPU soft limit; SIGXCPU, then SIGKILL a second later)."""
    data_bytes: int = 2 * _GIB
    """Heap and data segment per process (RLIMIT_DATA)."""
    as_bytes: int = 8 * _GIB
    """Address space per process (RLIMIT_AS). The JVM needs at least 4 GiB to start."""
    fsize_bytes: int = 64 * _MIB
    """Largest file a process may write (RLIMIT_FSIZE). Per file: not a disk quota."""
    nproc: int = 64
    """Processes of the sandbox uid (RLIMIT_NPROC); contains fork bombs."""
    nofile: int = 256
    """Open file descriptors per process (RLIMIT_NOFILE)."""
    tmp_bytes: int = 64 * _MIB
    """Size of the private `/tmp` tmpfs."""
    wall_s: float = 120.0
    """Wall-clock timeout; the whole sandbox is killed when it passes."""
    output_cap_bytes: int = 8 * _MIB
    """Output read before the sandbox is killed."""
    head_bytes: int = 32 * _KIB
    """Output kept from the start."""
    tail_bytes: int = 32 * _KIB
    """Output kept from the end."""

    def __post_init__(self) -> None:
        for spec in fields(self):
            value: int | float = getattr(self, spec.name)
            if value <= 0:
                raise ConfigError(f"SandboxLimits.{spec.name} must be positive, got {value!r}")
        if self.head_bytes + self.tail_bytes > self.output_cap_bytes:
            raise ConfigError("SandboxLimits: head_bytes + tail_bytes exceed output_cap_bytes")


DEFAULT_LIMITS = SandboxLimits()
"""The limits used when none are given."""


def prlimit_argv(prlimit: str, limits: SandboxLimits) -> list[str]:
    """The `prlimit` command that applies `limits` to the program that follows it.

    Args:
        prlimit: Path of the util-linux `prlimit` executable.
        limits: The limits to apply.

    Returns:
        The argv prefix, ending with `--`.
    """
    return [
        prlimit,
        f"--cpu={limits.cpu_s}:{limits.cpu_s + 1}",
        f"--data={limits.data_bytes}",
        f"--as={limits.as_bytes}",
        f"--fsize={limits.fsize_bytes}",
        f"--nproc={limits.nproc}",
        f"--nofile={limits.nofile}",
        "--core=0",
        "--",
    ]
