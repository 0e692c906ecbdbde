"""`harness models list | check`, run as a real process against a real server on 127.0.0.1."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from harness.testing import FakeOpenAIServer, FakeReply

HARNESS = str(Path(sys.executable).parent / "harness")

CONFIG = """
[defaults]
model = "fast"

[models.fast]
model = "qwen3-8b"
base_url = "{base_url}"
context_window = 32768
prices = {{ input = 0.15, output = 0.6 }}
fallbacks = ["local"]

[models.claude]
provider = "anthropic"
model = "claude-sonnet-4-5"
tool_calls = "native"
"""


def harness(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HARNESS_MODEL")},
        "HARNESS_HOME": str(cwd / ".harness"),
        "COLUMNS": "200",
        "NO_COLOR": "1",
        **(env or {}),
    }
    return subprocess.run(
        [HARNESS, *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=60
    )


def configure(tmp_path: Path, base_url: str = "http://127.0.0.1:9/v1") -> None:
    home = tmp_path / ".harness"
    home.mkdir(exist_ok=True)
    (home / "harness.toml").write_text(CONFIG.format(base_url=base_url))


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_list_shows_built_in_and_configured_profiles(tmp_path: Path) -> None:
    configure(tmp_path)
    done = harness("models", "list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split()[:3] == ["NAME", "PROVIDER", "MODEL"]
    assert [row.split()[0] for row in rows] == ["claude", "fast", "local"]
    fast = next(row for row in rows if row.startswith("fast"))
    assert "fast *" in fast  # the default
    assert "qwen3-8b" in fast
    assert "http://127.0.0.1:9/v1" in fast
    assert "32768" in fast
    assert "0.15/0.6/0.15" in fast
    assert "→ local" in fast
    assert next(row for row in rows if row.startswith("claude")).endswith("unknown")
    assert next(row for row in rows if row.startswith("local")).endswith("free")


def test_list_as_json_with_an_environment_override(tmp_path: Path) -> None:
    configure(tmp_path)
    done = harness(
        "models",
        "list",
        "--json",
        cwd=tmp_path,
        env={"HARNESS_MODELS__LOCAL__CONTEXT_WINDOW": "4096"},
    )
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in map(json.loads, done.stdout.splitlines())}
    assert set(rows) == {"claude", "fast", "local"}
    assert rows["local"]["context_window"] == 4096
    assert rows["local"]["base_url"] == "http://localhost:8080/v1"
    assert rows["fast"]["default"] is True
    assert rows["fast"]["prices"] == {"input": 0.15, "output": 0.6, "cached_input": None}
    assert rows["claude"]["provider"] == "anthropic"
    assert rows["claude"]["prices"] is None  # unknown
    assert rows["claude"]["tool_calls"] == "native"


def test_a_bad_configuration_names_the_file_and_the_key(tmp_path: Path) -> None:
    home = tmp_path / ".harness"
    home.mkdir()
    (home / "harness.toml").write_text("[models.fast]\nprices = { input = -1 }\n")
    done = harness("models", "list", cwd=tmp_path)
    assert done.returncode == 2
    assert "harness.toml" in done.stderr
    assert "models.fast.prices.input" in done.stderr


def test_check_reports_a_working_server(tmp_path: Path) -> None:
    replies = [FakeReply.text("ready"), FakeReply.tool_call("add", {"a": 2, "b": 3})]
    with FakeOpenAIServer(
        replies, props={"default_generation_settings": {"n_ctx": 16384}}
    ) as server:
        configure(tmp_path, server.base_url)
        done = harness("models", "check", "fast", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reachable:         yes, answered in" in done.stdout
    assert "native tool calls: yes" in done.stdout
    assert "32768 tokens (from the profile); the server reports only 16384" in done.stdout


def test_check_as_json(tmp_path: Path) -> None:
    leaked = '<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>'
    with FakeOpenAIServer([FakeReply.text("ready"), FakeReply.text(leaked)]) as server:
        done = harness(
            "models",
            "check",
            "openai:fake-model",
            "--base-url",
            server.base_url,
            "--json",
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    check = json.loads(done.stdout)
    assert check["ok"] is True
    assert check["profile"] == "openai:fake-model"
    assert check["native_tool_calls"] is False
    assert check["tool_reply"] == leaked
    assert check["context_window"] is None


def test_check_says_clearly_when_the_server_is_unreachable(tmp_path: Path) -> None:
    configure(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    done = harness("models", "check", "fast", cwd=tmp_path)
    assert done.returncode == 1
    assert "reachable:         no" in done.stdout
    assert "could not connect to http://127.0.0.1:" in done.stderr
    assert "Traceback" not in done.stderr


def test_check_of_an_unknown_profile(tmp_path: Path) -> None:
    done = harness("models", "check", "nope", cwd=tmp_path)
    assert done.returncode == 2
    assert "unknown model 'nope'" in done.stderr
