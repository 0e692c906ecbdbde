"""The seccomp filter given to `bwrap --seccomp`: no setuid or setgid bits, ever.

A sandboxed command must not leave behind a file that runs as someone else. Through an
idmapped workspace (`idmap.py`) a file the command makes belongs to the directory's owner,
often root, so a `chmod 4755` there would plant a setuid-root binary on the host
(research/sandbox-root-workspace.md); even as the sandbox uid, a setuid file is a way for
anyone to act as that uid. So every call that could set S_ISUID or S_ISGID fails with EPERM:
chmod, fchmod, fchmodat, and open, openat, creat, mkdir, mkdirat, mknod, mknodat asked to
create with those bits; `openat2` and `fchmodat2`, whose arguments a filter cannot read,
fail with ENOSYS so that programs fall back to the calls above. So does io_uring, which
opens and creates files in the kernel where no filter sees the mode (as Docker's default
profile does). This is the rule set of
systemd's `RestrictSUIDSGID=`. Everything else is allowed.

The one home of `pyseccomp` (ctypes over libseccomp).
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from typing import Any, Final

from harness.tools.sandbox.errors import SandboxUnavailable

__all__ = ["setid_filter"]

_O_TMPFILE_BITS: Final = getattr(os, "O_TMPFILE", 0o20200000) & ~os.O_DIRECTORY
_SYS_OPENAT2: Final = 437
_SYS_FCHMODAT2: Final = 452
_SYS_IO_URING: Final = (425, 426, 427)  # setup, enter, register

# (syscall, index of its mode argument, index of its flags argument or None)
_MODE_ARGS: Final = (
    ("chmod", 1, None), ("fchmod", 1, None), ("fchmodat", 2, None),
    ("creat", 1, None), ("mkdir", 1, None), ("mkdirat", 2, None),
    ("mknod", 1, None), ("mknodat", 2, None),
    ("open", 2, 1), ("openat", 3, 2),
)  # fmt: skip
_LEGACY: Final = frozenset({"chmod", "creat", "mkdir", "mknod", "open"})
"""Calls some architectures (arm64) do not have; their rules are skipped there."""


@functools.cache
def setid_filter() -> bytes:
    """The BPF program, as `bwrap --seccomp FD` reads it; built once per process.

    Raises:
        SandboxUnavailable: libseccomp is missing or refused the rules.
    """
    try:
        import pyseccomp as seccomp  # pyright: ignore[reportMissingTypeStubs]
    except (ImportError, OSError) as exc:  # the library loads libseccomp.so.2 on import
        raise SandboxUnavailable(
            f"cannot build the sandbox's seccomp filter: {exc}",
            hint="install libseccomp: apt-get install libseccomp2",
        ) from exc
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    for name, mode, flags in _MODE_ARGS:
        try:
            _deny_setid(seccomp, rules, name, mode, flags)
        except (OSError, RuntimeError, ValueError):
            if name not in _LEGACY:
                raise
    for number in (_SYS_OPENAT2, _SYS_FCHMODAT2, *_SYS_IO_URING):
        rules.add_rule(seccomp.ERRNO(errno.ENOSYS), number)
    return _export(rules)


def _deny_setid(seccomp: Any, rules: Any, name: str, mode: int, flags: int | None) -> None:
    denied = seccomp.ERRNO(errno.EPERM)
    for bit in (stat.S_ISUID, stat.S_ISGID):  # one rule per bit: a rule's tests all must hold
        setid = seccomp.Arg(mode, seccomp.MASKED_EQ, bit, bit)
        if flags is None:
            rules.add_rule(denied, name, setid)
            continue
        for creating in (os.O_CREAT, _O_TMPFILE_BITS):  # the mode counts only when it creates
            rules.add_rule(
                denied, name, seccomp.Arg(flags, seccomp.MASKED_EQ, creating, creating), setid
            )


class _Memfd:
    def __init__(self) -> None:
        self.fd = os.memfd_create("harness-seccomp", os.MFD_CLOEXEC)

    def fileno(self) -> int:
        return self.fd


def _export(rules: Any) -> bytes:
    out = _Memfd()
    try:
        rules.export_bpf(out)
        size = os.lseek(out.fd, 0, os.SEEK_END)
        return os.pread(out.fd, size, 0)
    finally:
        os.close(out.fd)
