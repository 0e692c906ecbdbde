"""`harness run --mcp NAME`: a real MCP server from harness.toml gives the agent its tools."""

import json
import os
import subprocess
import sys
from pathlib import Path

from harness.testing import FakeOpenAIServer, FakeReply

HARNESS = str(Path(sys.executable).parent / "harness")


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("HARNESS_MODEL", None)
    return subprocess.run(
        [HARNESS, "run", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_the_tools_of_a_configured_mcp_server_are_called_over_stdio(tmp_path: Path) -> None:
    (tmp_path / "harness.toml").write_text(
        f'[mcp.time]\ncommand = {json.dumps(sys.executable)}\nargs = ["-m", "mcp_server_time"]\n'
    )
    replies = [
        FakeReply.tool_call("get_current_time", {"timezone": "UTC"}, id="t1"),
        FakeReply.text("It is late."),
    ]
    with FakeOpenAIServer(replies) as server:
        done = run(
            tmp_path,
            "--json",
            "--tools",
            "none",
            "--mcp",
            "time",
            "--model",
            "openai:fake",
            "--base-url",
            server.base_url,
            "what time is it?",
        )
        first, second = (r.body for r in server.requests)
    assert done.returncode == 0, done.stderr
    offered = {t["function"]["name"] for t in first["tools"]}
    assert "get_current_time" in offered
    tool_message = second["messages"][-1]
    assert tool_message["tool_call_id"] == "t1"
    assert '"timezone": "UTC"' in tool_message["content"]
    assert (tmp_path / "logs" / "mcp-time.log").exists()


def test_an_unknown_mcp_server_is_a_clear_error(tmp_path: Path) -> None:
    done = run(
        tmp_path,
        "--mcp",
        "nope",
        "--model",
        "openai:fake",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "hi",
    )
    assert done.returncode == 2
    assert "no MCP server named 'nope'" in done.stderr
    assert "[mcp.nope]" in done.stderr
    assert "Traceback" not in done.stderr
