"""Helpers of the tests of harness.distributed (kept out of conftest.py, which other test
directories also have: `from conftest import` would be ambiguous)."""

from __future__ import annotations

import hashlib
import secrets
import socket

SESSION_TOKEN = secrets.token_hex(3)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def task_queue_for(nodeid: str) -> str:
    """The task queue of the test `nodeid` in this session."""
    digest = hashlib.sha256(nodeid.encode()).hexdigest()[:12]
    return f"test-{digest}-{SESSION_TOKEN}"
