"""Approvals across processes: a run waits; `harness approve|deny` from another process decides."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness.testing import FakeOpenAIServer, FakeReply
from harness.tools.sandbox import Sandbox

HARNESS = str(Path(sys.executable).parent / "harness")


def env_for(home: Path) -> dict[str, str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1"}
    env.pop("HARNESS_MODEL", None)
    return env


def start_run(home: Path, workspace: Path, base_url: str) -> subprocess.Popen[str]:
    args = [
        HARNESS,
        "run",
        "--json",
        "--network",
        "--tools",
        "bash",
        "--workspace",
        str(workspace),
        "--model",
        "openai:fake",
        "--base-url",
        base_url,
        "fetch it",
    ]
    return subprocess.Popen(
        args, env=env_for(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def wait_for_request(home: Path, proc: subprocess.Popen[str]) -> tuple[str, str, str]:
    """The run's request as `harness approvals --json` lists it, and what the run printed.

    The run prints each event once it is stored, so the listing is read when the run's
    `approval_requested` line is out rather than polled while the run starts up. A run that
    never asks is killed after 60 s, so that this fails instead of waiting forever.
    """
    killer = threading.Timer(60, proc.kill)
    killer.start()
    try:
        printed = read_until_asked(proc)
        return (*listed_request(home), printed)
    except BaseException:
        proc.kill()  # never leave a waiting run behind
        proc.communicate()
        raise
    finally:
        killer.cancel()


def read_until_asked(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    printed: list[str] = []
    for line in proc.stdout:
        printed.append(line)
        if json.loads(line)["type"] == "approval_requested":
            return "".join(printed)
    raise AssertionError(f"the run ended without asking: {''.join(printed)}")


def listed_request(home: Path) -> tuple[str, str]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        listed = cli(home, "approvals", "--json").stdout.splitlines()
        if listed:
            pending = json.loads(listed[0])
            return pending["run_id"], pending["call_id"]
        time.sleep(0.1)
    raise AssertionError("the run asked, but `harness approvals` lists no request")


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HARNESS, *args], env=env_for(home), capture_output=True, text=True, timeout=30
    )


def test_approve_from_another_process_lets_the_call_run(
    tmp_path: Path, sandbox: Sandbox, workspace: Path
) -> None:
    replies = [
        FakeReply.tool_call("bash", {"command": "echo approved-run"}, id="call_net"),
        FakeReply.text("done"),
    ]
    with FakeOpenAIServer(replies) as server:
        proc = start_run(tmp_path, workspace, server.base_url)
        run_id, call_id, printed = wait_for_request(tmp_path, proc)
        assert call_id == "call_net"
        listed = cli(tmp_path, "approvals")
        assert f"{run_id} call_net bash" in listed.stdout
        approved = cli(tmp_path, "approve", run_id, call_id)
        assert approved.returncode == 0, approved.stderr
        out, err = proc.communicate(timeout=60)
        out = printed + out
        tool_message = server.requests[1].body["messages"][-1]
    assert proc.returncode == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds.index("approval_requested") < kinds.index("approval_decided")
    decided = next(e for e in events if e["type"] == "approval_decided")
    assert decided["payload"]["approved"] is True
    assert decided["payload"]["by"].startswith("user:")
    assert "approved-run" in tool_message["content"]
    audit = cli(tmp_path, "audit", run_id, "--json")
    record = json.loads(audit.stdout.splitlines()[0])
    assert record["decision"] == "ask"
    assert record["approved"] is True
    assert record["decided_by"].startswith("user:")
    assert record["sandbox"] == "bwrap"
    assert record["exit_code"] == 0
    assert record["status"] == "ok"


def test_deny_with_a_reason_reaches_the_model_and_nothing_runs(
    tmp_path: Path, sandbox: Sandbox, workspace: Path
) -> None:
    marker = workspace / "should-not-exist"
    replies = [
        FakeReply.tool_call("bash", {"command": f"touch {marker.name}"}, id="call_x"),
        FakeReply.text("ok, I will not"),
    ]
    with FakeOpenAIServer(replies) as server:
        proc = start_run(tmp_path, workspace, server.base_url)
        run_id, call_id, _ = wait_for_request(tmp_path, proc)
        denied = cli(tmp_path, "deny", run_id, call_id, "--reason", "no network today")
        assert denied.returncode == 0, denied.stderr
        proc.communicate(timeout=60)
        tool_message = server.requests[1].body["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == "call_x"
    assert "no network today" in tool_message["content"]
    assert "denied" in tool_message["content"]
    assert not marker.exists()
    record = json.loads(cli(tmp_path, "audit", run_id, "--json").stdout.splitlines()[0])
    assert record["approved"] is False
    assert record["status"] == "denied"
    assert record["reason"] == "no network today"


def test_deciding_a_call_that_is_not_waiting_is_a_clear_error(tmp_path: Path) -> None:
    done = cli(tmp_path, "approve", "run_nope", "call_nope")
    assert done.returncode == 2
    assert "no run run_nope" in done.stderr
    assert "Traceback" not in done.stderr
