"""Run one command under prlimit + bwrap and watch it: output, deadline, cap, cleanup.

Blocking by design (a selectors loop); `Sandbox.run` drives it from a thread. The order of
the cleanup matters: the process group is killed while its leader is still unreaped (so its
pgid cannot have been recycled), then the leader is reaped, then bwrap's adopted pid 1.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from harness.tools.sandbox.bwrap import (
    BWRAP_ENV,
    GROUP,
    HOSTS,
    PASSWD,
    BwrapFds,
    bwrap_options,
    command_argv,
    encode_args,
)
from harness.tools.sandbox.errors import SandboxUnavailable
from harness.tools.sandbox.idmap import IdMap, enter_private_mounts, mount_idmapped
from harness.tools.sandbox.limits import SandboxLimits, prlimit_argv
from harness.tools.sandbox.output import OutputBuffer
from harness.tools.sandbox.reaping import (
    become_subreaper,
    child_pid_from_info,
    reap,
    reap_orphaned_inits,
)
from harness.tools.sandbox.result import SandboxResult, status_of
from harness.tools.sandbox.seccomp import setid_filter

__all__ = ["Job", "RunSpec"]

_Ending = Literal["done", "timeout", "cap", "cancel"]
_CHUNK = 65536
_EXIT_GRACE_S = 2.0
_DRAIN_S = 1.0


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """Everything needed to run one command."""

    bwrap: str
    prlimit: str
    run_as: int | None
    """Host uid (and gid) to drop to before bwrap; None to stay who we are."""
    command: str
    workspace: Path | None
    """Host directory for `/workspace`; None binds nothing."""
    limits: SandboxLimits
    idmap: IdMap | None = None
    """Mount the workspace with its owner shown as the sandbox uid (see `idmap.py`)."""
    mount_point: Path | None = None
    """Where the idmapped clone of the workspace is mounted for bwrap to bind."""
    identity: tuple[int, int] | None = None
    """The workspace's (st_dev, st_ino) when it was checked; the mount insists on it."""
    network: bool = False
    env: Mapping[str, str] = field(default_factory=lambda: {})
    hidden: tuple[str, ...] = ()
    """Workspace directories (relative) covered by an empty read-only tmpfs."""


class Job:
    """One run of one command; `cancel()` may be called from another thread.

    Args:
        spec: What to run.
    """

    def __init__(self, spec: RunSpec) -> None:
        self._spec = spec
        self._lock = threading.Lock()
        self._cancel_read, self._cancel_write = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._closed = False

    def cancel(self) -> None:
        """Kill the command soon; `run` then returns what it has."""
        with self._lock:
            if not self._closed:
                with contextlib.suppress(BlockingIOError):
                    os.write(self._cancel_write, b"x")

    def run(self) -> SandboxResult:
        """Run the command to its end, timeout, output cap or cancellation, and clean up.

        Raises:
            SandboxUnavailable: The sandbox programs could not be started.
        """
        started = time.monotonic()
        try:
            ending, returncode, output = self._run()
        finally:
            with self._lock:
                self._closed = True
                os.close(self._cancel_read)
                os.close(self._cancel_write)
        exit_code, sig = status_of(returncode)
        return SandboxResult(
            exit_code=exit_code,
            signal=sig,
            timed_out=ending == "timeout",
            output_capped=ending == "cap",
            output=output.text(),
            total_bytes=output.total,
            duration_s=time.monotonic() - started,
            backend="bwrap",
            network=self._spec.network,
        )

    def _run(self) -> tuple[_Ending, int, OutputBuffer]:
        become_subreaper()
        workspace = self._mount_workspace()
        limits = self._spec.limits
        output = OutputBuffer(head=limits.head_bytes, tail=limits.tail_bytes)
        with contextlib.ExitStack() as fds:
            info_read, info_write = os.pipe2(os.O_CLOEXEC)
            fds.callback(os.close, info_read)
            with contextlib.ExitStack() as child_fds:
                child_fds.callback(os.close, info_write)
                proc = self._spawn(info_write, child_fds, workspace)
            try:
                ending = self._watch(proc, output)
            finally:
                _kill_group(proc.pid)
                returncode = _reap_leader(proc)
                _reap_init(child_pid_from_info(info_read))
        return ending, returncode, output

    def _mount_workspace(self) -> Path | None:
        """The path bwrap binds at /workspace: an idmapped clone when the spec asks for one.

        The clone lives in this thread's own mount namespace: `Sandbox.run` runs each job
        in a thread made for it, so no other thread or process ever sees the mount.
        """
        spec = self._spec
        if spec.idmap is None or spec.workspace is None or spec.mount_point is None:
            return spec.workspace
        try:
            enter_private_mounts()
            mount_idmapped(spec.workspace, spec.mount_point, spec.idmap, identity=spec.identity)
        except OSError as exc:
            raise SandboxUnavailable(
                f"cannot mount the workspace {spec.workspace} for the sandbox: {exc}",
                hint="see `harness workspace new`, or run harness as a normal user",
            ) from exc
        return spec.mount_point

    def _spawn(
        self, info_write: int, fds: contextlib.ExitStack, workspace: Path | None
    ) -> subprocess.Popen[bytes]:
        spec = self._spec
        data = BwrapFds(
            passwd=_memfd(fds, "passwd", PASSWD),
            group=_memfd(fds, "group", GROUP),
            hosts=_memfd(fds, "hosts", HOSTS),
            info=info_write,
            seccomp=_memfd(fds, "seccomp", setid_filter()),
        )
        options = bwrap_options(
            fds=data,
            workspace=workspace,
            network=spec.network,
            env=spec.env,
            tmp_bytes=spec.limits.tmp_bytes,
            hidden=spec.hidden,
        )
        args_fd = _memfd(fds, "bwrap-args", encode_args(options))
        argv = [
            *prlimit_argv(spec.prlimit, spec.limits),
            *command_argv(spec.bwrap, args_fd, spec.command),
        ]
        passed = (data.passwd, data.group, data.hosts, data.info, data.seccomp, args_fd)
        return _popen(argv, passed, spec.run_as)

    def _watch(self, proc: subprocess.Popen[bytes], output: OutputBuffer) -> _Ending:
        assert proc.stdout is not None
        stdout = proc.stdout.fileno()
        os.set_blocking(stdout, False)
        pidfd = os.pidfd_open(proc.pid)
        try:
            watch = _Watch(stdout, pidfd, self._cancel_read, output, self._spec.limits)
            ending = watch.watch()
            if ending in ("timeout", "cancel"):
                _kill_group(proc.pid)
                watch.drain()
            return ending
        finally:
            os.close(pidfd)


class _Watch:
    """The selectors loop over the output pipe, the leader's pidfd and the cancel pipe."""

    def __init__(
        self, stdout: int, pidfd: int, cancel: int, output: OutputBuffer, limits: SandboxLimits
    ) -> None:
        self._stdout, self._pidfd, self._cancel = stdout, pidfd, cancel
        self._output = output
        self._cap = limits.output_cap_bytes
        self._deadline = time.monotonic() + limits.wall_s
        self._grace: float | None = None
        self._eof = False

    def watch(self) -> _Ending:
        """Read until the command ended (output closed and leader exited), or must be killed."""
        with selectors.DefaultSelector() as selector:
            for fd in (self._stdout, self._pidfd, self._cancel):
                selector.register(fd, selectors.EVENT_READ)
            while not (self._eof and self._grace is not None):
                ending = self._wait(selector)
                if ending is not None:
                    return ending
        return "done"

    def drain(self) -> None:
        """Read what the killed command left in the pipe, for a moment at most."""
        self._deadline = time.monotonic() + _DRAIN_S
        with selectors.DefaultSelector() as selector:
            selector.register(self._stdout, selectors.EVENT_READ)
            while not self._eof and self._deadline > time.monotonic():
                if selector.select(self._deadline - time.monotonic()):
                    self._read(selector)

    def _wait(self, selector: selectors.BaseSelector) -> _Ending | None:
        now = time.monotonic()
        if now >= self._deadline:
            return "timeout"
        if self._grace is not None and now >= self._grace:
            # bwrap exited and its pid 1 died with it: whatever holds the pipe is dying too.
            return "done"
        limit = min(self._deadline, self._grace or self._deadline)
        for key, _ in selector.select(limit - now):
            ending = self._handle(selector, key.fd)
            if ending is not None:
                return ending
        return None

    def _handle(self, selector: selectors.BaseSelector, fd: int) -> _Ending | None:
        if fd == self._cancel:
            return "cancel"
        if fd == self._pidfd:
            selector.unregister(fd)
            self._grace = time.monotonic() + _EXIT_GRACE_S
            return None
        self._read(selector)
        return "cap" if self._output.total >= self._cap else None

    def _read(self, selector: selectors.BaseSelector) -> None:
        try:
            chunk = os.read(self._stdout, _CHUNK)
        except BlockingIOError:
            return
        if chunk:
            self._output.feed(chunk)
        else:
            self._eof = True
            selector.unregister(self._stdout)


def _memfd(fds: contextlib.ExitStack, name: str, data: bytes) -> int:
    """An in-memory file holding `data`, read from the start: no pipe buffer to overflow."""
    fd = os.memfd_create(f"harness-{name}", os.MFD_CLOEXEC)
    fds.callback(os.close, fd)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _popen(argv: list[str], passed: tuple[int, ...], run_as: int | None) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=passed,
            env=BWRAP_ENV,
            cwd="/",
            start_new_session=True,
            user=run_as,
            group=run_as,
            extra_groups=None if run_as is None else [],
        )
    except OSError as exc:
        raise SandboxUnavailable(
            f"cannot start the sandbox: {exc}", hint="check that prlimit and bwrap are installed"
        ) from exc


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _reap_leader(proc: subprocess.Popen[bytes]) -> int:
    if proc.stdout is not None:
        proc.stdout.close()
    return proc.wait()


def _reap_init(pid: int | None) -> None:
    if pid is None:
        reap_orphaned_inits()
    else:
        reap(pid)
