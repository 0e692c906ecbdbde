"""The routes around the API: health, metrics, the dashboard's pages, login and logout."""

from __future__ import annotations

import asyncio
import html
import json
from pathlib import Path
from typing import Annotated, Any, Final, cast
from urllib.parse import parse_qs, urlsplit

from harness.server._http import (
    APIRouter,
    Depends,
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Request,
    Response,
)
from harness.server.auth import COOKIE, Principal, harness_of, require
from harness.server.problems import Problem, problem_response

__all__ = ["STATIC_DIR", "router"]

STATIC_DIR: Final = Path(__file__).parent / "static"
"""The dashboard's files (index.html, login.html, modules and styles), served at /static."""

router = APIRouter()
Reader = Annotated[Principal, Depends(require("read"))]
_READY_TIMEOUT_S: Final = 2.0


def _page(name: str, status: int = 200, error: str | None = None) -> HTMLResponse:
    """A page of the dashboard; `error` is shown on it (a failed login)."""
    path = STATIC_DIR / name
    text = path.read_text(encoding="utf-8") if path.exists() else f"<h1>{name} is missing</h1>"
    if error is not None:
        notice = f'<p role="alert" class="login-error">{html.escape(error)}</p>'
        text = (
            text.replace("</body>", notice + "</body>", 1) if "</body>" in text else text + notice
        )
    return HTMLResponse(text, status_code=status, headers={"Cache-Control": "no-store"})


@router.get("/healthz", include_in_schema=False)
async def healthz() -> dict[str, str]:
    """The process answers."""
    return {"status": "ok"}


@router.get("/readyz", include_in_schema=False)
async def readyz(request: Request) -> Response:
    """The store answers (within 2 s)."""
    harness = harness_of(request)
    try:
        async with asyncio.timeout(_READY_TIMEOUT_S):
            await harness.store.schema_version()
    except Exception:  # any failure of the store means: not ready
        return problem_response(503, "the store does not answer")
    return JSONResponse({"status": "ready"})


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(request: Request, _: Reader) -> Response:
    """The runs' Prometheus metrics (as `harness worker --metrics-port` serves them)."""
    from harness.observability.metrics import CONTENT_TYPE

    harness = harness_of(request)
    if harness.metrics is None:
        raise Problem(404, "this server keeps no metrics")
    return Response(await harness.metrics.render(), media_type=CONTENT_TYPE)


def _has_session(request: Request) -> bool:
    session_id = request.cookies.get(COOKIE)
    return bool(session_id) and request.app.state.sessions.get(session_id) is not None


@router.get("/", include_in_schema=False)
@router.get("/overview", include_in_schema=False)
@router.get("/runs/{run_id}", include_in_schema=False)
async def shell(request: Request) -> Response:
    """The dashboard (index.html) for a logged-in browser; the login page otherwise."""
    if not _has_session(request):
        return RedirectResponse("/login", status_code=303)
    return _page("index.html")


@router.get("/login", include_in_schema=False)
async def login_page() -> Response:
    """The dashboard's login page."""
    return _page("login.html")


async def _login_token(request: Request) -> tuple[str, bool]:
    """The token of a login form or JSON body, and whether the body was JSON."""
    body = await request.body()
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/json":
        try:
            data: Any = json.loads(body or b"{}")
        except (ValueError, UnicodeDecodeError):
            data = {}
        token = cast(dict[str, Any], data).get("token") if isinstance(data, dict) else None
        return (token if isinstance(token, str) else ""), True
    try:
        fields = parse_qs(body.decode(), max_num_fields=8)
    except (UnicodeDecodeError, ValueError):
        fields = {}
    return (fields.get("token") or [""])[0], False


def _same_origin(request: Request) -> bool:
    """`Origin` is absent, or the origin this server is reached at."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    parts = urlsplit(origin)
    return parts.scheme == request.url.scheme and parts.netloc == request.headers.get("host")


@router.post("/login", include_in_schema=False)
async def login(request: Request) -> Response:
    """Trade a token for a session cookie (HttpOnly, SameSite=Strict) and go to the dashboard."""
    if not _same_origin(request):
        raise Problem(403, "login from another origin is refused")
    token, as_json = await _login_token(request)
    state = request.app.state
    entry = state.tokens.find(token.strip()) if token.strip() else None
    if entry is None:
        if as_json:
            raise Problem(401, "the token is not valid")
        return _page("login.html", 401, "That token is not valid.")
    request.state.note = f"login as {entry.name}"
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(
        COOKIE,
        state.sessions.open(entry),
        max_age=int(state.config.session_hours * 3600),
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/logout", include_in_schema=False)
async def logout(request: Request) -> Response:
    """End the session of the cookie, if any, and go back to the login page."""
    if not _same_origin(request):
        raise Problem(403, "logout from another origin is refused")
    session_id = request.cookies.get(COOKIE)
    if session_id:
        request.app.state.sessions.close(session_id)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response
