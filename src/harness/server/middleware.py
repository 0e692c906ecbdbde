"""ASGI wrappers around the app: the request size limit, access logs, security headers.

Access log lines name the method, the path (never the query string), the status, the time to
the first byte and who called (the token's name): never a token, a cookie, or a body.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Final

from harness.server._http import ASGIApp, Message, Receive, Scope, Send
from harness.server.problems import problem_response

__all__ = ["ACCESS_LOG", "AccessLog", "BodyLimit"]

ACCESS_LOG: Final = logging.getLogger("harness.server.access")
_WITH_BODY: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_HEADERS: Final = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
)


class BodyLimit:
    """Refuse (413) a request whose body is over `max_bytes`, before the app reads it.

    The body is read here up to the limit, then handed to the app as it came.
    """

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self._app, self._max = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if scope["type"] != "http" or scope["method"] not in _WITH_BODY:
            await self._app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self._max):
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > self._max:
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        await self._app(scope, _replay(b"".join(chunks), receive), send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = problem_response(413, f"the request body is over {self._max} bytes")
        await response(scope, receive, send)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


class AccessLog:
    """One log line per request at its first byte, and the security headers on each reply."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = time.perf_counter()

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *_HEADERS]
                _log(scope, message["status"], time.perf_counter() - started)
            await send(message)

        await self._app(scope, receive, sending)


def _log(scope: Scope, status: int, seconds: float) -> None:
    state: dict[str, Any] = scope.get("state") or {}
    principal = state.get("principal")
    who = getattr(principal, "name", "-")
    note = state.get("note")
    client = scope.get("client") or ("-", 0)
    ACCESS_LOG.info(
        "%s %s %s %d %.1fms by=%s%s",
        client[0],
        scope["method"],
        scope["path"],
        status,
        seconds * 1000,
        who,
        f" ({note})" if note else "",
    )
