"""`MetricsServer` over real sockets on 127.0.0.1, and the rules of where it may listen."""

import asyncio
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.observability.metrics import CONTENT_TYPE, MetricsSubscriber
from harness.observability.serve import MetricsServer

from .scrape import scrape


async def fixed_page() -> bytes:
    return b"# HELP up Whether it is up.\n# TYPE up gauge\nup 1.0\n"


def request(url: str, method: str = "GET") -> tuple[int, bytes, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as r:
            return r.status, r.read(), r.headers["Content-Type"]
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers["Content-Type"]


async def test_get_and_head_of_metrics_and_nothing_else() -> None:
    async with MetricsServer(fixed_page, CONTENT_TYPE, port=0) as server:
        base = f"http://127.0.0.1:{server.port}"
        page = await scrape(f"{base}/metrics?name[]=up")
        head = await asyncio.to_thread(request, f"{base}/metrics", "HEAD")
        missing = await asyncio.to_thread(request, f"{base}/")
        posted = await asyncio.to_thread(request, f"{base}/metrics", "POST")
    assert page.value("up") == 1.0
    assert page.content_type == CONTENT_TYPE
    assert head == (200, b"", CONTENT_TYPE)
    assert missing[0] == 404
    assert b"/metrics" in missing[1]
    assert posted[0] == 405


async def test_a_failing_page_is_a_500_and_the_server_goes_on() -> None:
    pages = [RuntimeError("the store at postgresql://u:secret@db/h is down")]

    async def render() -> bytes:
        if pages:
            raise pages.pop()
        return await fixed_page()

    async with MetricsServer(render, CONTENT_TYPE, port=0) as server:
        failed = await asyncio.to_thread(request, server.url)
        then = await scrape(server.url)
    assert failed[0] == 500
    assert failed[1] == b"RuntimeError; see the log\n"  # never the message: it may hold a secret
    assert then.value("up") == 1.0


async def test_a_client_that_sends_half_a_request_does_not_block_others() -> None:
    async with MetricsServer(fixed_page, CONTENT_TYPE, port=0) as server:
        _, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET /metrics HTTP/1.1\r\n")  # and never the end of the head
        await writer.drain()
        page = await scrape(server.url)
        writer.close()
    assert page.value("up") == 1.0


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.7", "example.com"])
def test_only_the_loopback_unless_allowed(host: str) -> None:
    with pytest.raises(ConfigError, match="not a loopback address"):
        MetricsServer(fixed_page, CONTENT_TYPE, host=host)
    MetricsServer(fixed_page, CONTENT_TYPE, host=host, allow_remote=True)  # explicit


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_addresses_need_nothing(host: str) -> None:
    MetricsServer(fixed_page, CONTENT_TYPE, host=host)


async def test_a_port_in_use_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"cannot serve metrics on 127.0.0.1:{port}"):
            await MetricsServer(fixed_page, CONTENT_TYPE, port=port).start()


async def test_two_subscribers_in_one_process_keep_apart() -> None:
    first, second = MetricsSubscriber(), MetricsSubscriber()
    assert first.registry is not second.registry
    assert b"harness_model_tokens" in await first.render()  # registering twice is fine


def test_importing_harness_and_running_without_metrics_never_loads_prometheus_client(
    tmp_path: Path,
) -> None:
    script = f"""
import asyncio, sys
from pathlib import Path
import harness, harness.runtime, harness.cli.app, harness.cli.runs, harness.observability
from harness import Agent, Harness
from harness.runtime import Settings
from harness.testing import ScriptedModel

async def main():
    async with Harness(Settings(home=Path({str(tmp_path)!r}))) as h:
        await h.run(Agent(name="a", model=ScriptedModel(["hi"])), "hello")
asyncio.run(main())
assert "prometheus_client" not in sys.modules, "loaded"
import harness.observability.metrics
assert "prometheus_client" in sys.modules
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
