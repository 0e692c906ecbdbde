"""Errors as `application/problem+json` (RFC 9457): `{"type", "title", "status", "detail"}`.

Routes raise `Problem`; harness's own errors are translated here once, so that a lifecycle
mistake reads the same over HTTP as on the command line (409 with the lifecycle message).
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, Final

from harness.errors import (
    AlreadyDecided,
    ConfigError,
    HarnessError,
    InvalidTransition,
    RunError,
    RunQueueFull,
    StoreError,
)
from harness.server._http import (
    FastAPI,
    HTTPException,
    JSONResponse,
    Request,
    RequestValidationError,
    Response,
)

__all__ = ["PROBLEM_TYPE", "Problem", "install_handlers", "problem_response"]

PROBLEM_TYPE: Final = "application/problem+json"


class Problem(Exception):
    """An HTTP error answered as problem+json.

    Args:
        status: The HTTP status.
        detail: What went wrong, for a person.
        headers: Extra response headers (`WWW-Authenticate` …).
    """

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers or {}


def problem_response(
    status: int, detail: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    """The problem+json response of `status` with `detail`."""
    title = HTTPStatus(status).phrase
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    return JSONResponse(body, status_code=status, media_type=PROBLEM_TYPE, headers=headers)


def _status_of(exc: HarnessError) -> int:
    """The HTTP status of one of harness's errors."""
    if isinstance(exc, RunQueueFull | StoreError):
        return 503
    if isinstance(exc, InvalidTransition | AlreadyDecided | RunError):
        return 409
    if isinstance(exc, ConfigError):
        return 422
    return 500


async def _on_problem(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, Problem)
    return problem_response(exc.status, exc.detail, exc.headers)


async def _on_harness_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, HarnessError)
    status = _status_of(exc)
    detail = str(exc) if status != 500 else "internal error"
    return problem_response(status, detail)


async def _on_http(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return problem_response(exc.status_code, str(exc.detail), dict(exc.headers or {}))


async def _on_invalid(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    return problem_response(422, "; ".join(_describe(e) for e in exc.errors()))


def _describe(error: Any) -> str:
    """One validation error as `where: what`."""
    loc = tuple(error.get("loc", ()))
    if error.get("type") == "json_invalid":  # loc is ("body", offset)
        ctx: dict[str, Any] = error.get("ctx") or {}
        why = str(ctx.get("error", ""))
        at = f" at character {loc[-1]}" if len(loc) > 1 else ""
        return f"body: not valid JSON{at}" + (f" ({why})" if why else "")
    where = ".".join(str(part) for part in loc if part != "body")
    return f"{where or 'body'}: {error.get('msg', 'invalid')}"


def install_handlers(app: FastAPI) -> None:
    """Answer every error of `app` as problem+json."""
    app.add_exception_handler(Problem, _on_problem)
    app.add_exception_handler(HarnessError, _on_harness_error)
    app.add_exception_handler(HTTPException, _on_http)
    app.add_exception_handler(RequestValidationError, _on_invalid)
