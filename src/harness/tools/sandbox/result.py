"""What one sandboxed command did."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Literal

__all__ = ["SandboxResult", "status_of"]

_SIGNAL_BASE = 128


@dataclass(frozen=True, kw_only=True)
class SandboxResult:
    """What one sandboxed command did."""

    exit_code: int | None
    """bash's exit status; None when the sandbox itself was killed (timeout, output cap)."""
    signal: int | None
    """The signal that ended the command (from a `128 + N` exit status), or that killed it."""
    timed_out: bool
    """The wall-clock timeout passed and everything was killed."""
    output_capped: bool
    """Output passed `output_cap_bytes` and everything was killed."""
    output: str
    """stdout and stderr interleaved: head, `[... N bytes omitted ...]`, tail; cleaned."""
    total_bytes: int
    """Bytes of output read, kept or not."""
    duration_s: float
    """Wall-clock time, from start to the last process reaped."""
    backend: Literal["bwrap", "none"]
    """The isolation used."""
    network: bool
    """Whether the command could reach the network."""


def status_of(returncode: int) -> tuple[int | None, int | None]:
    """(exit code, signal) from the leader's return code, decoding the shell's `128 + N`."""
    if returncode < 0:
        return None, -returncode
    if _SIGNAL_BASE < returncode < _SIGNAL_BASE + signal.NSIG:
        return returncode, returncode - _SIGNAL_BASE
    return returncode, None
