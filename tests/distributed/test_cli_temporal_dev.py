"""`harness temporal dev`: a real dev server in the foreground, as a user runs it.

Each test starts the real command in a project directory of its own, waits for the lines it
prints once the server answers, talks to the server with a real client, and stops it with
the signals a terminal or a supervisor sends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporal_support import free_port
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client

VENV_BIN = Path(sys.executable).parent
HARNESS = str(VENV_BIN / "harness")
DEV = [HARNESS, "temporal", "dev"]
SRC = Path(__file__).resolve().parents[2] / "src"
USER = 4242
"""An unprivileged uid with no other use on the machine."""


class Dev:
    """A running `harness temporal dev` and what it printed (read by a thread)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.out: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def read_until(self, line: str, within_s: float = 60) -> list[str]:
        deadline = time.monotonic() + within_s
        while line not in self.out:
            try:
                got = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {line!r} in time; got {self.out}") from None
            assert got is not None, f"stdout ended before {line!r}: {self.out}; {self.stderr()}"
            self.out.append(got)
        return self.out

    def rest(self) -> list[str]:
        """What it printed after `read_until`, up to its end (call once it exited)."""
        while (got := self.lines.get(timeout=10)) is not None:
            self.out.append(got)
        return self.out

    def stderr(self) -> str:
        if self.process.poll() is None or self.process.stderr is None:
            return ""
        return self.process.stderr.read()

    def server_pid(self) -> int:
        """The `temporal` process the command started (its only child)."""
        pids = _children(self.process.pid)
        assert len(pids) == 1, pids
        return pids[0]


def start(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> Dev:
    environ = {k: v for k, v in os.environ.items() if k != "HARNESS_HOME"}
    process = subprocess.Popen(
        [HARNESS, "temporal", "dev", *args],
        cwd=cwd,
        env={**environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return Dev(process)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "my-project"
    path.mkdir()
    return path


@pytest.fixture
def running() -> Iterator[list[Dev]]:
    """Commands the test started; any still running at the end is killed with its server."""
    started: list[Dev] = []
    yield started
    for dev in started:
        if dev.process.poll() is None:
            servers = _children(dev.process.pid)  # their own session: a killed parent leaves them
            dev.process.kill()
            dev.process.wait()
            for pid in servers:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for stream in (dev.process.stdout, dev.process.stderr):
            if stream is not None:
                stream.close()


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def gone(pid: int) -> bool:
    try:
        return "State:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True


async def namespace_of(address: str) -> str:
    client = await Client.connect(address)
    answer = await client.workflow_service.describe_namespace(
        DescribeNamespaceRequest(namespace="default")
    )
    return answer.namespace_info.name


def test_it_serves_from_the_project_and_stops_on_sigterm(project: Path, running: list[Dev]) -> None:
    port = free_port()
    dev = start(["--headless", "--port", str(port)], cwd=project)
    running.append(dev)
    out = dev.read_until("Ctrl-C stops it.")
    assert f"Temporal dev server on 127.0.0.1:{port}" in out
    db = project / ".harness" / "temporal" / "dev.db"
    assert f"Data: {db} (log: {db}.log)" in out
    assert out[out.index("[runtime]") : out.index("[runtime]") + 4] == [
        "[runtime]",
        'backend = "temporal"',
        f'temporal_address = "127.0.0.1:{port}"',
        'namespace = "default"',
    ]
    assert asyncio.run(namespace_of(f"127.0.0.1:{port}")) == "default"
    server = dev.server_pid()
    dev.process.send_signal(signal.SIGTERM)
    assert dev.process.wait(30) == 0
    assert gone(server)
    assert "Temporal dev server stopped." in dev.rest()
    assert db.is_file()


def test_ctrl_c_stops_it_and_the_data_stays(project: Path, running: list[Dev]) -> None:
    port = free_port()
    db = project / "state" / "t.db"
    for _ in range(2):  # the second start finds the first one's file
        dev = start(["--headless", "--port", str(port), "--db-filename", str(db)], cwd=project)
        running.append(dev)
        dev.read_until("Ctrl-C stops it.")
        server = dev.server_pid()
        dev.process.send_signal(signal.SIGINT)
        assert dev.process.wait(30) == 0
        assert gone(server)
        assert db.is_file()


def test_the_web_ui_listens_on_port_plus_1000_by_default(project: Path, running: list[Dev]) -> None:
    port = free_port()
    while port + 1000 > 65535 or not _free(port + 1000):
        port = free_port()
    dev = start(["--port", str(port)], cwd=project)
    running.append(dev)
    out = dev.read_until("Ctrl-C stops it.")
    assert f"Temporal dev server on 127.0.0.1:{port}, web UI http://127.0.0.1:{port + 1000}" in out
    with socket.create_connection(("127.0.0.1", port + 1000), timeout=5):
        pass
    dev.process.send_signal(signal.SIGTERM)
    assert dev.process.wait(30) == 0


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--headless", "--ui-port", "9000"], "give --ui-port or --headless, not both"),
        (["--log-level", "loud"], "--log-level 'loud': give one of debug, info, warn"),
        (["--port", "7300", "--ui-port", "7300"], "--ui-port 7300 is --port too"),
        (["--port", "65000"], "(--port + 1000) is no port: use --ui-port"),
        (["--port", "0"], "Invalid value for '--port': Input should be greater than or equal to 1"),
        (["--headless", "--db-filename", "."], "is a directory: give the path of a file"),
    ],
)
def test_bad_flags_are_clear_errors(project: Path, args: list[str], says: str) -> None:
    done = subprocess.run(
        [HARNESS, "temporal", "dev", *args], cwd=project, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert says in " ".join(done.stderr.replace("│", " ").split()), done.stderr
    assert not (project / ".harness").exists()


def test_a_port_in_use_is_a_clear_error(project: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [HARNESS, "temporal", "dev", "--headless", "--port", str(port)],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr
    assert "--port" in done.stderr


def test_a_server_that_dies_ends_the_command_with_its_log(
    project: Path, running: list[Dev]
) -> None:
    dev = start(["--headless", "--port", str(free_port())], cwd=project)
    running.append(dev)
    dev.read_until("Ctrl-C stops it.")
    os.kill(dev.server_pid(), signal.SIGKILL)
    assert dev.process.wait(30) == 1
    assert "the Temporal dev server exited by itself (code -9)" in dev.stderr()


def _readable_by_others(path: Path) -> bool:
    for part in [path, *path.parents]:
        mode = part.stat().st_mode
        if not mode & stat.S_IXOTH or (part == path and not mode & stat.S_IROTH):
            return False
    return True


def _as_user() -> list[str]:
    return ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--clear-groups"]


@pytest.fixture
def user_project() -> Iterator[Path]:
    """A project directory of USER's, under a directory every user can traverse."""
    base = Path(tempfile.mkdtemp(prefix="harness-user-"))
    os.chmod(base, 0o755)
    own = base / "project"
    own.mkdir()
    os.chown(own, USER, USER)
    yield own
    shutil.rmtree(base)


@pytest.mark.skipif(os.geteuid() != 0, reason="already a normal user: the tests above")
def test_a_normal_user_runs_it_in_their_own_project(user_project: Path) -> None:
    """As an unprivileged uid that /etc/passwd does not name, with no $USER (as in a
    container run with an arbitrary uid), with the system's Python and this checkout's
    packages."""
    site = Path(str(sys.modules["temporalio"].__file__)).parents[1]
    python = Path("/usr/bin/python3")
    binary = VENV_BIN / "temporal"
    if not python.exists() or not all(_readable_by_others(p) for p in (site, SRC, binary)):
        pytest.skip("this checkout or its venv is not readable by other users")
    port = free_port()
    env = {
        "PATH": f"{VENV_BIN}:/usr/bin:/bin",
        "PYTHONPATH": f"{SRC}:{site}",
        "HOME": str(user_project),
        "LANG": "C.UTF-8",
    }
    command = ["from harness.cli.app import main; main()", "temporal", "dev", "--headless"]
    process = subprocess.Popen(
        [*_as_user(), str(python), "-c", *command, "--port", str(port)],
        cwd=user_project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    dev = Dev(process)
    try:
        dev.read_until("Ctrl-C stops it.")
        assert asyncio.run(namespace_of(f"127.0.0.1:{port}")) == "default"
        db = user_project / ".harness" / "temporal" / "dev.db"
        assert db.stat().st_uid == USER
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0, dev.stderr()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def test_a_data_file_it_cannot_write_is_a_clear_error(tmp_path: Path) -> None:
    blocked = tmp_path / "ro"
    blocked.mkdir()
    (blocked / "x").write_text("a file where a directory should be")
    db = blocked / "x" / "dev.db"
    done = subprocess.run(
        [*DEV, "--headless", "--port", str(free_port()), "--db-filename", str(db)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert f"cannot write {blocked / 'x'}" in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr


def test_a_command_killed_with_sigkill_leaves_no_server(project: Path, running: list[Dev]) -> None:
    port = free_port()
    dev = start(["--headless", "--port", str(port)], cwd=project)
    running.append(dev)
    dev.read_until("Ctrl-C stops it.")
    server = dev.server_pid()
    dev.process.kill()  # nothing of the command runs: no stop, no SIGTERM to the group
    dev.process.wait(10)
    deadline = time.monotonic() + 30
    while not gone(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    if not gone(server):  # the fixture cannot find the server of a dead command: kill it here
        os.kill(server, signal.SIGKILL)
        raise AssertionError("the server outlived the command that started it")
    with pytest.raises(ConnectionRefusedError):  # and nothing listens on its port any more
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
