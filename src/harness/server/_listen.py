"""The one home of uvicorn: serve an ASGI app on a socket bound beforehand.

The socket is bound before anything else starts, so that a port in use is a clear error and
not a log line of uvicorn's. SIGINT and SIGTERM stop the server gracefully: `on_exit` runs
first (it ends the open event streams, which would otherwise hold the shutdown), and the
signal is not raised again afterwards, so the caller closes its runtime cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import signal
import socket
from collections.abc import Callable, Generator
from typing import Any, Final

import uvicorn

from harness.errors import ConfigError

__all__ = ["bind", "listen"]

_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host:port` (port 0 picks a free one).

    Raises:
        ConfigError: The port is in use, or the address cannot be used.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host!r}: not an address of this machine ({exc})") from exc
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} on {host} is in use (another harness serve?): stop that process "
                "or pick another port with --port"
            ) from exc
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.setblocking(False)
    return sock


class _Server(uvicorn.Server):
    """uvicorn's server, with our signal handling (see the module's docstring)."""

    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_exit = on_exit

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        loop = asyncio.get_running_loop()
        for sig in _SIGNALS:
            loop.add_signal_handler(sig, self._stop, sig)
        try:
            yield
        finally:
            for sig in _SIGNALS:
                loop.remove_signal_handler(sig)

    def _stop(self, sig: int) -> None:
        self._on_exit()
        self.handle_exit(sig, None)
        self._captured_signals.clear()  # stopping is all a signal asks for: not raised again


async def listen(
    app: Any, sock: socket.socket, *, on_exit: Callable[[], None], grace_s: int = 5
) -> None:
    """Serve `app` on `sock` until SIGINT or SIGTERM; returns once every connection closed.

    Args:
        app: The ASGI app.
        sock: A listening socket (`bind`).
        on_exit: Called when a signal asks the server to stop, before it waits for
            connections to close.
        grace_s: How long requests in flight may take to finish after that.
    """
    config = uvicorn.Config(
        app,
        log_config=None,
        log_level="warning",
        access_log=False,
        server_header=False,
        proxy_headers=False,
        lifespan="on",
        timeout_graceful_shutdown=grace_s,
        timeout_keep_alive=5,
    )
    await _Server(config, on_exit).serve(sockets=[sock])
