"""Reaping the processes bwrap leaves behind, so no zombie of the sandbox uid remains.

bwrap exits before its in-namespace pid 1 has been reaped. That pid 1 is re-parented to the
nearest subreaper; if that is the host's init, its zombie lingers for a while and counts
against the sandbox uid's RLIMIT_NPROC. So the harness makes itself a subreaper and reaps it.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import time

__all__ = ["become_subreaper", "child_pid_from_info", "reap", "reap_orphaned_inits"]

_PR_SET_CHILD_SUBREAPER = 36
_REAP_TIMEOUT_S = 5.0
_CHILD_PID = re.compile(rb'"child-pid":\s*(\d+)')


@functools.cache
def become_subreaper() -> None:
    """Make this process adopt its orphaned descendants (once per process).

    Raises:
        OSError: prctl failed (not Linux, or too old a kernel).
    """
    libc = ctypes.CDLL(None, use_errno=True)
    result: int = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(number)}")


def child_pid_from_info(info_fd: int) -> int | None:
    """The `child-pid` that bwrap wrote to its `--info-fd`, if it got that far."""
    os.set_blocking(info_fd, False)
    try:
        data = os.read(info_fd, 4096)
    except BlockingIOError:
        return None
    found = _CHILD_PID.search(data)
    return int(found.group(1)) if found else None


def reap(pid: int) -> None:
    """Wait (a few seconds at most) for the adopted child `pid` to exit, and reap it.

    Returns at once if `pid` is not a child of this process (already reaped, or no
    subreaper), so a recycled pid is never waited for.
    """
    deadline = time.monotonic() + _REAP_TIMEOUT_S
    pause = 0.0005
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done or time.monotonic() > deadline:
            return
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def reap_orphaned_inits() -> None:
    """Reap adopted sandbox inits whose pid bwrap never reported (it was killed too early).

    A sandbox init is recognised as a child of this process that is pid 1 of a nested pid
    namespace; no other child of the harness looks like that.
    """
    me = str(os.getpid())
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and _is_adopted_init(entry.name, me):
            reap(int(entry.name))


def _is_adopted_init(pid: str, parent: str) -> bool:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
    except OSError:
        return False
    nspids = fields.get("NSpid", "").split()
    return fields.get("PPid", "").strip() == parent and len(nspids) > 1 and nspids[-1] == "1"
