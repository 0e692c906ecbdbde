"""Running a command in its own process group with a deadline and bounded output capture.

Lessons from `research/sandbox.md` §2.7: a background child that keeps the output pipe
open must not block the call, and a timeout must kill the whole process group, not just
the shell. The call therefore ends when the shell itself exits; whatever is left in its
process group is then killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

__all__ = ["ProcessResult", "run_process"]

HEAD_BYTES: Final = 64 * 1024
TAIL_BYTES: Final = 64 * 1024
MAX_BYTES: Final = 8 * 1024 * 1024
"""Output after which the command is killed: it is producing more than anyone reads."""
GRACE_S: Final = 0.1
"""How long to keep reading buffered output once the shell has exited."""

Ending = Literal["exited", "timeout", "output_cap"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ProcessResult:
    """How a command ended and what it wrote (stdout and stderr merged)."""

    ending: Ending
    """Whether the shell exited, or was killed at the deadline or the output cap."""
    returncode: int | None
    """The shell's exit status; negative when a signal ended it, as in `subprocess`."""
    head: bytes
    """The first bytes of output."""
    tail: bytes
    """The last bytes of output, after `head`; empty when everything fits in `head`."""
    total_bytes: int
    """Bytes of output read in all."""
    duration_s: float
    """Seconds from start to the end of the call."""

    @property
    def omitted_bytes(self) -> int:
        """Bytes read but not kept, between `head` and `tail`."""
        return self.total_bytes - len(self.head) - len(self.tail)


class _Capture(asyncio.Protocol):
    """Keeps the head and tail of a pipe's data and counts the rest."""

    def __init__(self, *, head_bytes: int, tail_bytes: int, max_bytes: int) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.capped = asyncio.Event()
        self.closed = asyncio.Event()
        self._limits = (head_bytes, tail_bytes, max_bytes)
        self._transport: asyncio.ReadTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.ReadTransport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        head_bytes, tail_bytes, max_bytes = self._limits
        self.total += len(data)
        room = head_bytes - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        del self.tail[: max(0, len(self.tail) - tail_bytes)]
        if self.total >= max_bytes and self._transport is not None:
            self._transport.pause_reading()
            self.capped.set()

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()


async def run_process(
    argv: Sequence[str],
    *,
    timeout_s: float,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    head_bytes: int = HEAD_BYTES,
    tail_bytes: int = TAIL_BYTES,
    max_bytes: int = MAX_BYTES,
) -> ProcessResult:
    """Run `argv` in a new session, stdin empty, stdout and stderr merged into one pipe.

    The call returns once the process has exited (or been killed at the deadline or the
    output cap). Everything left in its process group is then killed, so background
    children neither block the call nor outlive it.

    Args:
        argv: The program and its arguments.
        timeout_s: Seconds before the whole process group is killed.
        cwd: Working directory; `None` keeps the current one.
        env: The environment; `None` inherits the current one.
        head_bytes: Bytes of output kept from the start.
        tail_bytes: Bytes of output kept from the end.
        max_bytes: Bytes of output after which the process group is killed.

    Returns:
        How the process ended and what it wrote.

    Raises:
        OSError: The process could not be started (missing program or directory).
    """
    loop = asyncio.get_running_loop()
    started = loop.time()
    capture = _Capture(head_bytes=head_bytes, tail_bytes=tail_bytes, max_bytes=max_bytes)
    process, transport = await _start(argv, cwd, env, capture)
    try:
        ending = await _wait(process, capture, timeout_s)
        if ending == "exited":
            await _settle(capture.closed, GRACE_S)
        _kill_group(process.pid)
        await process.wait()
        await _settle(capture.closed, GRACE_S)
    finally:
        _kill_group(process.pid)
        transport.close()
        if process.returncode is None:
            await process.wait()
    return ProcessResult(
        ending=ending,
        returncode=process.returncode,
        head=bytes(capture.head),
        tail=bytes(capture.tail),
        total_bytes=capture.total,
        duration_s=loop.time() - started,
    )


async def _start(
    argv: Sequence[str], cwd: str | Path | None, env: Mapping[str, str] | None, capture: _Capture
) -> tuple[asyncio.subprocess.Process, asyncio.ReadTransport]:
    """Start the process writing into a pipe whose reading end harness owns."""
    read_fd, write_fd = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=write_fd,
            stderr=write_fd,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    pipe = os.fdopen(read_fd, "rb", buffering=0)
    try:
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(lambda: capture, pipe)
    except BaseException:
        pipe.close()
        _kill_group(process.pid)
        await process.wait()
        raise
    return process, transport


async def _wait(process: asyncio.subprocess.Process, capture: _Capture, limit_s: float) -> Ending:
    exited = asyncio.ensure_future(process.wait())
    capped = asyncio.ensure_future(capture.capped.wait())
    try:
        done, _ = await asyncio.wait(
            {exited, capped}, timeout=limit_s, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        for task in (exited, capped):
            task.cancel()
        await asyncio.gather(exited, capped, return_exceptions=True)
    if exited in done:
        return "exited"
    return "output_cap" if capped in done else "timeout"


async def _settle(event: asyncio.Event, seconds: float) -> None:
    """Wait up to `seconds` for `event`."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), seconds)


def _kill_group(pgid: int) -> None:
    """SIGKILL every process left in the group; the shell leads it (new session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
