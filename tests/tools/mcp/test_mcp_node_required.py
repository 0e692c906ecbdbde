"""Tests of the npm MCP servers fail without Node unless the developer opts out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
NODE_TEST = "tests/tools/mcp/test_mcp_servers.py::test_a_real_call_succeeds[everything-stdio]"


def run_without_node(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run one test of an npm server with a PATH on which there is no node or npm."""
    empty = tmp_path / "bin"
    empty.mkdir()
    clean = {k: v for k, v in os.environ.items() if k != "HARNESS_ALLOW_NO_NODE"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", NODE_TEST],
        cwd=ROOT,
        env={**clean, "PATH": str(empty), **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    ("env", "outcome"),
    [({}, "1 error"), ({"HARNESS_ALLOW_NO_NODE": "1"}, "1 skipped")],
    ids=["fails-by-default", "skips-when-allowed"],
)
def test_a_missing_node_fails_unless_the_developer_opts_out(
    tmp_path: Path, env: dict[str, str], outcome: str
) -> None:
    done = run_without_node(tmp_path, **env)
    assert outcome in done.stdout, done.stdout + done.stderr
    assert "need npm, which is not on PATH" in done.stdout
