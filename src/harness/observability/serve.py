"""`MetricsServer`: `GET /metrics` over HTTP/1.1, served on the event loop of the runs.

A small server of its own rather than prometheus_client's thread: the page is made on the
loop that owns the metrics and the store (the queue depth is read from the store), so
nothing is shared across threads. One request per connection; it answers `GET` and `HEAD`
of `/metrics` (any query string), 404 elsewhere, 405 for other methods.

It listens on the loopback by default: metrics name agents, models and tools, so a wider
address needs `allow_remote` (the house rule for every server of harness).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from harness.errors import ConfigError

__all__ = ["MetricsServer", "check_host", "is_loopback"]

_log = logging.getLogger(__name__)
_READ_TIMEOUT_S: Final = 10.0
_MAX_HEAD: Final = 16 * 1024


def is_loopback(host: str) -> bool:
    """Whether `host` is `localhost` or a loopback address (a name other than localhost is not)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_host(host: str, *, allow_remote: bool) -> None:
    """Refuse an address other than the loopback unless `allow_remote`.

    Raises:
        ConfigError: `host` is not a loopback address (or `localhost`) and
            `allow_remote` is false.
    """
    if not allow_remote and not is_loopback(host):
        raise ConfigError(
            f"metrics host {host!r} is not a loopback address: the metrics page names your "
            "agents, models and tools; serve it on 127.0.0.1 (the default), or allow other "
            "hosts explicitly (--metrics-allow-remote, `[observability] metrics_allow_remote`)"
        )


class MetricsServer:
    """Serves `render()` at `/metrics`; use `async with` or `start` / `close`.

    Args:
        render: Makes the page (e.g. `MetricsSubscriber.render`).
        content_type: Its media type.
        host: The address to listen on.
        port: The port; 0 picks a free one (see `port` once started).
        allow_remote: Allow a host other than the loopback.

    Raises:
        ConfigError: A non-loopback host without `allow_remote`.
    """

    def __init__(
        self,
        render: Callable[[], Awaitable[bytes]],
        content_type: str,
        *,
        host: str = "127.0.0.1",
        port: int = 9464,
        allow_remote: bool = False,
    ) -> None:
        check_host(host, allow_remote=allow_remote)
        self._render, self._content_type = render, content_type
        self.host, self._port = host, port
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        """The port listened on (the one picked, when started with 0)."""
        if self._server is None or not self._server.sockets:
            return self._port
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        """Where the page is."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    async def start(self) -> None:
        """Listen.

        Raises:
            ConfigError: The address cannot be listened on (in use, not ours).
        """
        try:
            self._server = await asyncio.start_server(self._serve, self.host, self._port)
        except OSError as exc:
            raise ConfigError(
                f"cannot serve metrics on {self.host}:{self._port}: {exc.strerror or exc}"
            ) from exc

    async def close(self) -> None:
        """Stop listening and close open connections."""
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> MetricsServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(_READ_TIMEOUT_S):
                head = await reader.readuntil(b"\r\n\r\n")
            status, body = await self._answer(head)
            await self._send(writer, status, body, head.startswith(b"HEAD "))
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # a client that sent no whole request in time gets nothing
        except ConnectionError:
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, head: bytes) -> tuple[str, bytes]:
        parts = head[:_MAX_HEAD].split(b"\r\n", 1)[0].split(b" ")
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
            return "400 Bad Request", b"not an HTTP/1.x request\n"
        method, target = parts[0], parts[1].split(b"?", 1)[0]
        if method not in (b"GET", b"HEAD"):
            return "405 Method Not Allowed", b"only GET and HEAD\n"
        if target != b"/metrics":
            return "404 Not Found", b"the metrics are at /metrics\n"
        try:
            return "200 OK", await self._render()
        except Exception as exc:  # e.g. the store cannot be read: say so, keep serving
            _log.exception("rendering the metrics failed")
            # The kind only: the message may hold a store URL with its password (in the log).
            return "500 Internal Server Error", f"{type(exc).__name__}; see the log\n".encode()

    async def _send(
        self, writer: asyncio.StreamWriter, status: str, body: bytes, head_only: bool
    ) -> None:
        content_type = self._content_type if status == "200 OK" else "text/plain; charset=utf-8"
        header = (
            f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        writer.write(header.encode("ascii") + (b"" if head_only else body))
        await writer.drain()
