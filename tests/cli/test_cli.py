"""The `harness` command, run as a real process against a real HTTP server on 127.0.0.1."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from harness.testing import FakeOpenAIServer, FakeReply
from harness.tools.sandbox import Sandbox

HARNESS = str(Path(sys.executable).parent / "harness")


NO_NETWORK = ("bwrap", "--dev-bind", "/", "/", "--unshare-net", "--")
"""Runs a command in a network namespace of its own: only a loopback where nothing listens."""


def harness(
    *args: str, cwd: Path, timeout: float = 60, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARNESS_HOME": str(cwd / ".harness"), "COLUMNS": "200", "NO_COLOR": "1"}
    env.pop("HARNESS_MODEL", None)
    return subprocess.run(
        [*prefix, HARNESS, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("stream", [False, True])
def test_run_end_to_end_over_http(
    tmp_path: Path, stream: bool, sandbox: Sandbox, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("one\ntwo\nthree\n")
    sandbox.prepare_workspace(workspace)
    replies = [
        FakeReply.tool_call("bash", {"command": "wc -l < notes.txt"}),
        FakeReply.text("notes.txt has 3 lines."),
    ]
    with FakeOpenAIServer(replies) as server:
        args = [
            "run",
            "--workspace",
            str(workspace),
            "--model",
            "openai:fake",
            "--base-url",
            server.base_url,
            "how many lines in notes.txt?",
        ]
        done = harness(*args, *(["--stream"] if stream else []), cwd=tmp_path)
        second = server.requests[1].body
    assert done.returncode == 0, done.stdout + done.stderr
    assert "⚙ bash" in done.stdout
    assert "wc -l < notes.txt" in done.stdout
    assert "notes.txt has 3 lines." in done.stdout
    assert "final answer" in done.stdout
    assert second.get("stream", False) is stream
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool"
    assert "3" in tool_message["content"]
    assert second["messages"][-2]["tool_calls"][0]["id"] == tool_message["tool_call_id"]


def test_json_mode_prints_one_event_per_line(
    tmp_path: Path, sandbox: Sandbox, workspace: Path
) -> None:
    replies = [FakeReply.tool_call("bash", {"command": "echo hi"}), FakeReply.text("said hi")]
    with FakeOpenAIServer(replies) as server:
        done = harness(
            "run",
            "--workspace",
            str(workspace),
            "--json",
            "--model",
            "openai:fake",
            "--base-url",
            server.base_url,
            "say hi",
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert all({"run_id", "seq", "ts", "type", "payload"} <= set(e) for e in events)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    kinds = [e["type"] for e in events]
    for kind in (
        "run_started",
        "step_started",
        "model_called",
        "model_responded",
        "tool_started",
        "tool_completed",
        "agent_message",
        "run_finished",
    ):
        assert kind in kinds
    assert events[-1]["type"] == "run_finished"
    assert events[-1]["payload"]["output"] == "said hi"


def test_max_steps_exits_non_zero_and_says_why(tmp_path: Path) -> None:
    replies = [FakeReply.tool_call("bash", {"command": "true"}) for _ in range(2)]
    with FakeOpenAIServer(replies) as server:
        done = harness(
            "run",
            "--max-steps",
            "2",
            "--model",
            "openai:fake",
            "--base-url",
            server.base_url,
            "loop forever",
            cwd=tmp_path,
        )
    assert done.returncode == 1
    assert "max_steps" in done.stdout


def test_unreachable_model_gives_one_clear_message(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    done = harness("run", "--model", "openai:fake", "--base-url", url, "hello", cwd=tmp_path)
    assert done.returncode == 1
    output = done.stdout + done.stderr
    assert "Traceback" not in output
    assert f"127.0.0.1:{url.split(':')[2].split('/')[0]}" in output
    assert "llama-server -m MODEL.gguf --jinja" in output


@pytest.mark.parametrize("status", [401, 404])
def test_auth_and_not_found_errors_say_how_to_fix(tmp_path: Path, status: int) -> None:
    body = json.dumps({"error": {"message": "nope", "type": "invalid_request_error"}}).encode()
    with FakeOpenAIServer([FakeReply.raw(status, {"content-type": "application/json"}, body)]) as s:
        done = harness(
            "run", "--model", "openai:fake", "--base-url", s.base_url, "hi", cwd=tmp_path
        )
    output = done.stdout + done.stderr
    assert done.returncode == 1
    assert "Traceback" not in output
    assert str(status) in output
    assert "harness.toml" in output


def test_default_model_is_the_local_llamacpp_server(tmp_path: Path, sandbox: Sandbox) -> None:
    # In a network namespace of its own nothing listens on :8080, whatever runs on this
    # machine: the run fails, and the message says which server it tried.
    done = harness("run", "--json", "hello", cwd=tmp_path, prefix=NO_NETWORK)
    started = json.loads(done.stdout.splitlines()[1])
    assert started["type"] == "run_started"
    assert started["payload"]["model"].startswith("local")
    assert done.returncode != 0
    assert "localhost:8080" in done.stderr


def test_bad_config_is_reported_without_traceback(tmp_path: Path) -> None:
    (tmp_path / ".harness").mkdir()
    (tmp_path / ".harness" / "harness.toml").write_text("[models.x]\ntimeout_s = 'x'\n")
    done = harness("run", "hello", cwd=tmp_path)
    assert done.returncode == 2
    assert "harness.toml" in done.stderr
    assert "models.x.timeout_s" in done.stderr
    assert "Traceback" not in done.stderr


def test_demo_runs_and_says_the_model_is_scripted(tmp_path: Path) -> None:
    done = harness("demo", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SCRIPTED" in done.stdout
    assert "invalid_arguments" in done.stdout  # the mistake the model recovers from
    assert "app/server.py` is the largest Python file with 120 lines" in done.stdout
