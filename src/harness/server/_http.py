"""The one home of FastAPI (and of Starlette, under it): the names the server uses.

Every other module of `harness.server` takes these from here (ruff's `banned-api`), so the
web framework is imported in one place and could be swapped in one place.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, StreamingResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "APIRoute",
    "APIRouter",
    "ASGIApp",
    "CORSMiddleware",
    "Depends",
    "FastAPI",
    "HTMLResponse",
    "HTTPException",
    "Header",
    "JSONResponse",
    "Message",
    "Query",
    "Receive",
    "RedirectResponse",
    "Request",
    "RequestValidationError",
    "Response",
    "Scope",
    "Send",
    "StaticFiles",
    "StreamingResponse",
]
