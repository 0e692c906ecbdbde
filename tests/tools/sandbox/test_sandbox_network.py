"""Network isolation: the host's loopback services, UDP and DNS are out of reach by default."""

from __future__ import annotations

import socket
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.tools.sandbox import Sandbox

pytestmark = pytest.mark.sandbox

CONNECT = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()
    print("CONNECTED")
except OSError as exc:
    print("refused:", type(exc).__name__)
"""


class _Hello(BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello from the host")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[ThreadingHTTPServer]:
    """An HTTP server on the host's 127.0.0.1."""
    _Hello.hits = 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def udp_listener() -> Iterator[socket.socket]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.settimeout(0.3)
    yield listener
    listener.close()


def port(server: ThreadingHTTPServer) -> int:
    return server.server_address[1]


async def test_host_loopback_services_are_unreachable(
    sandbox: Sandbox, workspace: Path, http_server: ThreadingHTTPServer
) -> None:
    url = f"http://127.0.0.1:{port(http_server)}/"
    with urllib.request.urlopen(url, timeout=5) as response:  # the server does work
        assert response.status == 200
    (workspace / "connect.py").write_text(CONNECT)
    script = f"""
    curl -s -m 3 -o /dev/null {url}; echo "curl=$?"
    python3 connect.py {port(http_server)}
    (echo > /dev/tcp/127.0.0.1/{port(http_server)}) 2>/dev/null && echo CONNECTED
    """
    result = await sandbox.run(script, workspace=workspace)
    assert "curl=7" in result.output
    assert "refused: ConnectionRefusedError" in result.output
    assert "CONNECTED" not in result.output
    assert _Hello.hits == 1


async def test_udp_to_the_host_is_not_delivered(
    sandbox: Sandbox, workspace: Path, udp_listener: socket.socket
) -> None:
    host_port = udp_listener.getsockname()[1]
    script = f"echo leak > /dev/udp/127.0.0.1/{host_port}; echo sent=$?"
    result = await sandbox.run(script, workspace=workspace)
    assert "sent=" in result.output
    with pytest.raises(TimeoutError):
        udp_listener.recv(100)


async def test_dns_fails(sandbox: Sandbox, workspace: Path) -> None:
    script = "python3 -c 'import socket; socket.getaddrinfo(\"example.com\", 80)' 2>&1 | tail -1"
    result = await sandbox.run(script, workspace=workspace)
    assert "gaierror" in result.output


async def test_a_loopback_server_inside_the_sandbox_works(
    sandbox: Sandbox, workspace: Path
) -> None:
    (workspace / "connect.py").write_text(CONNECT)
    script = """
    python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 &
    for _ in $(seq 50); do python3 connect.py 8765 | grep -q CONNECTED && break; sleep 0.1; done
    curl -s http://localhost:8765/ >/dev/null && echo SERVED
    """
    result = await sandbox.run(script, workspace=workspace)
    assert "SERVED" in result.output


async def test_network_true_shares_the_host_network(
    sandbox: Sandbox, workspace: Path, http_server: ThreadingHTTPServer
) -> None:
    url = f"http://127.0.0.1:{port(http_server)}/"
    result = await sandbox.run(f"curl -s -m 5 {url}", workspace=workspace, network=True)
    assert result.network
    assert result.output == "hello from the host"
