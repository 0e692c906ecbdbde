"""The durable runtime from the command line: detached runs, a worker, control from anywhere.

Every test with a worker runs on SQLite and on PostgreSQL (HARNESS_STORE for all processes).
"""

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.store import open_store
from harness.testing import FakeOpenAIServer, FakeReply

HARNESS = str(Path(sys.executable).parent / "harness")


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("HARNESS_MODEL", None)
    return subprocess.run([HARNESS, *args], env=env, capture_output=True, text=True, timeout=60)


def show(home: Path, run_id: str) -> dict[str, Any]:
    done = cli(home, "runs", "show", run_id, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def wait_state(home: Path, run_id: str, *states: str) -> dict[str, Any]:
    """`harness runs show --json` of the run, once it is in one of `states`.

    The wait reads the store in this process; spawning `harness runs show` for every poll
    took the CPU that the worker running the run needed. The record returned is still the
    command's, and it must show one of `states`.
    """
    deadline = time.monotonic() + 60
    record: dict[str, Any] = {}
    while time.monotonic() < deadline:
        asyncio.run(until_state(home, run_id, set(states), deadline))
        record = show(home, run_id)
        if record["state"] in states:
            return record
    raise AssertionError(f"{run_id} never reached {states}: {record}")


async def until_state(home: Path, run_id: str, states: set[str], deadline: float) -> None:
    target = os.environ.get("HARNESS_STORE") or str(home / "harness.db")
    async with await open_store(target) as store:
        while time.monotonic() < deadline:
            found = await store.get_run(run_id)
            if found is not None and found.state in states:
                return
            await asyncio.sleep(0.05)


@pytest.fixture
def worker(tmp_path: Path, store_target: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("HARNESS_STORE", store_target)  # for the worker and every command
    env = {**os.environ, "HARNESS_HOME": str(tmp_path)}
    proc = subprocess.Popen(
        [HARNESS, "worker", "--concurrency", "4"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("worker ")
    yield
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert "worker stopped" in out


def detach(home: Path, base_url: str, task: str, *extra: str) -> str:
    done = cli(
        home, "run", "--detach", "--model", "openai:fake", "--base-url", base_url, *extra, task
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def slow(reply: FakeReply, seconds: float) -> FakeReply:
    return dataclasses.replace(reply, delay_s=seconds)


def test_detached_runs_are_executed_by_a_worker(tmp_path: Path, worker: None) -> None:
    with FakeOpenAIServer([FakeReply.text("hello from the worker")]) as server:
        run_id = detach(tmp_path, server.base_url, "say hello", "--tools", "none")
        assert run_id.startswith("run_")
        record = wait_state(tmp_path, run_id, "COMPLETED", "FAILED")
    assert record["result"] == "hello from the worker"
    assert record["termination"] == "final_answer"
    listed = cli(tmp_path, "runs", "list", "--state", "completed", "--json").stdout
    assert run_id in listed
    events = [
        json.loads(line)
        for line in cli(tmp_path, "runs", "events", run_id, "--json").stdout.splitlines()
    ]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "run_finished"
    replayed = [
        json.loads(line) for line in cli(tmp_path, "replay", run_id, "--json").stdout.splitlines()
    ]
    assert [m["role"] for m in replayed] == ["system", "user", "assistant"]
    assert replayed[-1]["content"] == "hello from the worker"
    readable = cli(tmp_path, "replay", run_id).stdout
    assert "── user" in readable
    assert "say hello" in readable


def test_pause_and_resume_from_other_processes(tmp_path: Path, worker: None) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    replies = [slow(FakeReply.tool_call("list_dir", {}), 1.5) for _ in range(3)]
    replies.append(FakeReply.text("listed three times"))
    with FakeOpenAIServer(replies) as server:
        run_id = detach(
            tmp_path, server.base_url, "list", "--tools", "list_dir", "--workspace", str(workspace)
        )
        wait_state(tmp_path, run_id, "RUNNING")
        assert cli(tmp_path, "pause", run_id).returncode == 0
        wait_state(tmp_path, run_id, "PAUSED")
        requests_while_paused = len(server.requests)
        time.sleep(1.0)
        assert len(server.requests) == requests_while_paused
        again = cli(tmp_path, "pause", run_id)
        assert again.returncode == 2
        assert f"cannot pause run {run_id}: it is PAUSED" in again.stderr
        assert cli(tmp_path, "resume", run_id).returncode == 0
        record = wait_state(tmp_path, run_id, "COMPLETED", "FAILED")
    assert record["result"] == "listed three times"
    kinds = [
        json.loads(line)["type"]
        for line in cli(tmp_path, "runs", "events", run_id, "--json").stdout.splitlines()
    ]
    assert "run_paused" in kinds
    assert "run_resumed" in kinds


def test_cancel_from_another_process_interrupts_the_model_call(
    tmp_path: Path, worker: None
) -> None:
    with FakeOpenAIServer([slow(FakeReply.text("too late"), 30)]) as server:
        run_id = detach(tmp_path, server.base_url, "wait", "--tools", "none")
        while not server.requests:
            time.sleep(0.05)
        done = cli(tmp_path, "cancel", run_id, "--reason", "user gave up")
        assert done.returncode == 0, done.stderr
        record = wait_state(tmp_path, run_id, "CANCELLED")
    assert record["termination"] == "cancelled"
    events = [
        json.loads(line)
        for line in cli(tmp_path, "runs", "events", run_id, "--json").stdout.splitlines()
    ]
    assert events[-1]["type"] == "run_cancelled"
    assert events[-1]["payload"]["reason"] == "user gave up"


def test_sigterm_stops_a_worker_as_ctrl_c_does_and_another_takes_its_run_over(
    tmp_path: Path, store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """systemd, `docker stop` and Kubernetes stop a worker with SIGTERM: its lease is released."""
    monkeypatch.setenv("HARNESS_STORE", store_target)
    env = {**os.environ, "HARNESS_HOME": str(tmp_path)}
    command = [HARNESS, "worker", "--concurrency", "4"]
    replies = [slow(FakeReply.text("never heard"), 30), FakeReply.text("the second worker")]
    with FakeOpenAIServer(replies) as server:
        first = start(command, env)
        assert first.stdout is not None
        assert first.stdout.readline().startswith("worker ")
        run_id = detach(tmp_path, server.base_url, "wait", "--tools", "none")
        while not server.requests:
            time.sleep(0.05)
        first.send_signal(signal.SIGTERM)
        out, err = first.communicate(timeout=30)
        assert first.returncode == 0, err
        assert "worker stopped; its runs will be taken over by the next worker" in out
        assert "Traceback" not in err
        record = asyncio.run(stored_run(store_target, run_id))
        assert (record.owner, record.lease_expires_at) == (None, None)
        second = start(command, env)
        try:
            done = wait_state(tmp_path, run_id, "COMPLETED", "FAILED")
        finally:
            second.send_signal(signal.SIGTERM)
            second.communicate(timeout=30)
    assert done["result"] == "the second worker"
    assert len(server.requests) == 2


def start(command: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    pipe = subprocess.PIPE
    return subprocess.Popen(command, env=env, stdout=pipe, stderr=pipe, text=True)


async def stored_run(target: str, run_id: str) -> Any:
    async with await open_store(target) as store:
        return await store.get_run(run_id)


def test_unknown_runs_are_clear_errors(tmp_path: Path) -> None:
    for args in (("runs", "show", "run_x"), ("pause", "run_x"), ("replay", "run_x")):
        done = cli(tmp_path, *args)
        assert done.returncode == 2
        assert "no run run_x" in done.stderr
        assert "Traceback" not in done.stderr


def test_harness_send_wakes_a_run_waiting_for_a_message(tmp_path: Path, worker: None) -> None:
    replies = [FakeReply.tool_call("wait_for_message", {"timeout_s": 120}), FakeReply.text("heard")]
    with FakeOpenAIServer(replies) as server:
        run_id = detach(tmp_path, server.base_url, "listen", "--tools", "wait_for_message")
        wait_state(tmp_path, run_id, "WAITING_TOOL")
        sent = cli(tmp_path, "send", run_id, "the tests pass", "--sender", "alice")
        assert sent.returncode == 0, sent.stderr
        assert sent.stdout.startswith("message ")
        assert sent.stdout.strip().endswith(f"sent to {run_id}")
        record = wait_state(tmp_path, run_id, "COMPLETED", "FAILED")
        last = server.requests[-1].body["messages"]
    assert record["result"] == "heard"
    assert last[-1]["role"] == "tool"
    assert last[-1]["content"] == "[message from alice]: the tests pass"
    finished = cli(tmp_path, "send", run_id, "too late")
    assert finished.returncode == 2
    assert f"run {run_id} is COMPLETED: a finished run reads no more messages" in finished.stderr


def test_harness_send_refuses_bad_input_clearly(tmp_path: Path) -> None:
    unknown = cli(tmp_path, "send", "run_x", "hello")
    assert unknown.returncode == 2
    assert "cannot send to run run_x: there is no run run_x" in unknown.stderr
    empty = cli(tmp_path, "send", "run_x", " ")
    assert empty.returncode == 2
    assert "the message is empty" in empty.stderr
    assert "Traceback" not in unknown.stderr + empty.stderr
