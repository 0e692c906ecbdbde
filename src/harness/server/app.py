"""`create_app`: the FastAPI app of `harness serve` over one open `Harness`.

```text
AccessLog            one line per request, security headers
└── BodyLimit        413 over [server] max_body_bytes
    └── CORS         only when [server] cors_origins is set
        └── FastAPI  /api (routes_runs, routes_reports), shell (health, login, pages),
                     /static (the dashboard), /openapi.json; errors as problem+json
```
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from typing import Annotated, Any

from harness.runtime.harness import Harness
from harness.runtime.server_config import ServerConfig
from harness.server import routes_reports, routes_runs, shell
from harness.server._http import ASGIApp, CORSMiddleware, Depends, FastAPI, StaticFiles
from harness.server.auth import Principal, Sessions, TokenBook, require
from harness.server.middleware import AccessLog, BodyLimit
from harness.server.problems import install_handlers
from harness.server.sse import LiveFeed, Streams

__all__ = ["ServerApp", "create_app"]


class ServerApp:
    """The ASGI app of `harness serve`, with what stopping it needs.

    Attributes:
        api: The FastAPI app (its routes, its OpenAPI schema).
        streams: The open event streams; `close` ends them.
    """

    def __init__(self, api: FastAPI, asgi: ASGIApp, streams: Streams, feed: LiveFeed) -> None:
        self.api, self.streams, self._asgi, self._feed = api, streams, asgi, feed

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Handle one ASGI connection."""
        await self._asgi(scope, receive, send)

    async def close(self) -> None:
        """End every open event stream and stop following the store."""
        self.streams.close_all()
        await self._feed.aclose()


def create_app(
    harness: Harness,
    config: ServerConfig | None = None,
    *,
    env: Mapping[str, str] | None = None,
) -> ServerApp:
    """The app serving `harness` (open, or opened by the caller before requests come).

    Args:
        harness: The runtime the API reads and steers.
        config: The `[server]` table; `harness.settings.server` when omitted.
        env: Where `HARNESS_SERVER_TOKEN` is read; `os.environ` when omitted.
    """
    from harness import __version__

    config = config or harness.settings.server
    streams = Streams(max_open=config.max_streams, max_per_name=config.max_streams_per_token)
    feed: LiveFeed | None = None

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncGenerator[None]:
        yield
        streams.close_all()
        if feed is not None:
            await feed.aclose()

    api = FastAPI(
        title="harness",
        version=__version__,
        description="Runs of LLM agents: list, submit, follow and steer them (docs/server.md).",
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    api.state.harness = harness
    api.state.config = config
    api.state.tokens = TokenBook(config, os.environ if env is None else env)
    api.state.sessions = Sessions(config.session_hours * 3600)
    api.state.streams = streams
    feed = api.state.feed = LiveFeed(lambda: harness.store)
    install_handlers(api)
    for router in (routes_runs.router, routes_reports.router, shell.router):
        api.include_router(router)
    _add_openapi(api)
    api.mount("/static", StaticFiles(directory=shell.STATIC_DIR, check_dir=False), name="static")
    asgi: ASGIApp = api
    if config.cors_origins:
        asgi = CORSMiddleware(
            asgi,
            allow_origins=list(config.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
        )
    asgi = AccessLog(BodyLimit(asgi, max_bytes=config.max_body_bytes))
    return ServerApp(api, asgi, streams, feed)


def _add_openapi(api: FastAPI) -> None:
    """`GET /openapi.json`, for holders of a token like every other route."""

    @api.get("/openapi.json", include_in_schema=False)
    async def openapi(_: Annotated[Principal, Depends(require("read"))]) -> dict[str, Any]:
        return api.openapi()
