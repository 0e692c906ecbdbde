"""harness, durable, traced: `harness_durable` with every span exported over OTLP/HTTP.

An adapter for ../shared/bench/peers (copied next to its adapters by bench/durable.py
--traced). Setup starts a do-nothing OTLP/HTTP receiver in a process of its own on
127.0.0.1 (its CPU is not the framework's), points the standard `OTEL_*` variables at it,
and opens the same Harness as `harness_durable`: spans go through the SDK's
BatchSpanProcessor and its exporter thread, as in production.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from . import harness_durable
from .harness_durable import run_once

NAME = "harness, durable + OTLP traces"
DISTS: tuple[str, ...] = ("harness", "opentelemetry-sdk")
FLOOR = "raw_durable"

_SINK = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
"""
_sink: subprocess.Popen[bytes] | None = None

__all__ = ["run_once", "setup", "teardown"]


async def setup(workdir: str) -> None:
    global _sink
    _sink, port = _start_sink()
    os.environ["OTEL_TRACES_EXPORTER"] = "otlp"
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{port}"
    await harness_durable.setup(workdir)


def _start_sink() -> tuple[subprocess.Popen[bytes], int]:
    """The receiver process, once it accepts connections, and its port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sink = subprocess.Popen([sys.executable, "-c", _SINK, str(port)])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return sink, port


async def teardown() -> None:
    await harness_durable.teardown()  # flushes the spans still queued
    if _sink is not None:
        _sink.kill()
        _sink.wait()
