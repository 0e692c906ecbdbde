"""Fixtures for the MCP tests: real servers from PyPI and npm, and a leak check.

The npm servers are installed into `servers/node_modules` with `npm ci` from the committed
`servers/package-lock.json`, started in the background as soon as collection has chosen a
test that needs them (it then runs beside the tests before them); `npm_servers` waits for
it. Tests that need them fail without node and npm (`.ci/run` installs both): missing
servers must never turn into green skips. A developer on a machine without Node can opt out
explicitly with HARNESS_ALLOW_NO_NODE=1; those tests then skip with the same reason.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_test_support import FLAKY_SERVER, NPM_SCOPE, SERVERS, descendants, installed, wait_for_exit

from background_process import Background
from harness.tools.mcp import MCPServerConfig


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    """Every test ends with no server process of its own still running."""
    before = descendants()
    yield
    assert wait_for_exit(before) == set(), "an MCP server process outlived its test"


def need(program: str) -> str:
    """The path of `program`; fails without it, or skips when HARNESS_ALLOW_NO_NODE=1."""
    found = shutil.which(program)
    if found is not None:
        return found
    reason = (
        f"the npm MCP servers need {program}, which is not on PATH (apt-get install nodejs npm)"
    )
    if os.environ.get("HARNESS_ALLOW_NO_NODE") == "1":
        pytest.skip(f"{reason}; skipped because HARNESS_ALLOW_NO_NODE=1")
    pytest.fail(f"{reason}. Set HARNESS_ALLOW_NO_NODE=1 to skip these tests instead.")


_npm_ci: list[Background] = []
"""The `npm ci` started in the background, with the file that takes its output."""


def _missing_servers() -> bool:
    wanted = json.loads((SERVERS / "package.json").read_text())["dependencies"]
    return not all(installed(name, version) for name, version in wanted.items())


def _start_npm_ci(npm: str) -> None:
    """Start `npm ci` from the lock file once per session, when a server is missing.

    When another process of the session started it, this one waits for it too: it may be
    rewriting `node_modules` even though the servers look installed.
    """
    if _npm_ci:
        return
    started = Background.started("npm-ci")
    if started is not None:
        _npm_ci.append(started)
    elif _missing_servers():
        command = [npm, "ci", "--no-audit", "--no-fund"]
        _npm_ci.append(Background.start("npm-ci", command, SERVERS))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start `npm ci` as soon as a collected test needs the npm servers.

    It then runs beside the tests that come before them; `npm_servers` waits for it.
    """
    npm = shutil.which("npm")
    needed = any("npm_servers" in getattr(item, "fixturenames", ()) for item in session.items)
    if needed and npm is not None and shutil.which("node") is not None:
        _start_npm_ci(npm)


@pytest.fixture(scope="session")
def npm_servers() -> Path:
    """`node_modules/@modelcontextprotocol`, installed from the lock file when needed."""
    npm, _ = need("npm"), need("node")
    _start_npm_ci(npm)
    if _npm_ci:
        returncode, text = _npm_ci[0].wait()
        assert returncode == 0, f"npm ci failed:\n{text[-4000:]}"
    return NPM_SCOPE


@pytest.fixture(scope="session")
def node() -> str:
    return need("node")


@pytest.fixture
def flaky() -> Callable[..., MCPServerConfig]:
    """Config of the misbehaving test server; keyword arguments override fields."""

    base = MCPServerConfig(
        name="flaky", command=sys.executable, args=(str(FLAKY_SERVER),), timeout_s=5.0
    )

    def make(**overrides: Any) -> MCPServerConfig:
        return dataclasses.replace(base, **overrides)

    return make
