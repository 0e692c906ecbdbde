"""Helpers for the MCP tests: process accounting and the HTTP server-everything.

Kept out of conftest.py, which other test directories also have: `from conftest import`
would find whichever came first on sys.path.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

SERVERS = Path(__file__).parent / "servers"
FLAKY_SERVER = SERVERS / "flaky_server.py"
NPM_SCOPE = SERVERS / "node_modules" / "@modelcontextprotocol"


def _parents() -> dict[int, int]:
    """The parent of every live process (zombies are dead and do not count)."""
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if state != "Z":
            parents[int(entry.name)] = int(ppid)
    return parents


def descendants() -> set[int]:
    """Live processes below this one."""
    parents = _parents()
    found: set[int] = set()
    frontier = {os.getpid()}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return found


def new_trees(before: set[int]) -> set[int]:
    """Processes below this one started since `before`, not counting those started by a
    process of `before` (a server that outlives the test may run helpers of its own)."""
    parents = _parents()
    left: set[int] = set()
    for pid in descendants() - before:
        ancestor = parents.get(pid, 0)
        while ancestor not in before and ancestor in parents and ancestor != os.getpid():
            ancestor = parents[ancestor]
        if ancestor not in before:
            left.add(pid)
    return left


def wait_for_exit(before: set[int], timeout_s: float = 6.0) -> set[int]:
    """Processes started since `before` (see `new_trees`) still alive after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while (left := new_trees(before)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def installed(package: str, version: str) -> bool:
    manifest = NPM_SCOPE.parent / package / "package.json"
    return manifest.is_file() and json.loads(manifest.read_text())["version"] == version


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, "the HTTP server exited at start"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port}")


def start_everything_http(node: str, scope: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start server-everything on streamable HTTP; returns the process and its MCP URL."""
    port = free_port()
    process = subprocess.Popen(
        [node, str(scope / "server-everything" / "dist" / "index.js"), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process)
    except BaseException:
        stop(process)
        raise
    return process, f"http://127.0.0.1:{port}/mcp"


def stop(process: subprocess.Popen[bytes]) -> None:
    process.kill()
    process.wait(timeout=10)
