"""`harness serve`: the HTTP API over the store, live events, auth, and the dashboard's files.

Needs the `server` extra (`pip install 'harness[server]'`): FastAPI and uvicorn. Modules:
`app` (create_app), `auth` (tokens, sessions, roles, CSRF), `sse` (event streams),
`problems` (problem+json errors), `routes_runs` and `routes_reports` (/api), `shell`
(health, metrics, login, the dashboard's pages), `middleware` (size limit, access log),
`_http` (the one home of FastAPI), `_listen` (the one home of uvicorn).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.server.app import ServerApp, create_app

__all__ = ["ServerApp", "create_app"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from harness.server import app

        value = getattr(app, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'harness.server' has no attribute {name!r}")
