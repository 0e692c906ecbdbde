"""Who is calling: Bearer tokens, dashboard sessions, roles, CSRF.

Tokens are known by their SHA-256 only (`[server.tokens.NAME]` of harness.toml, plus
`HARNESS_SERVER_TOKEN`, an admin token hashed at start). A dashboard login trades a token
for an opaque session id in an HttpOnly, SameSite=Strict cookie; state-changing requests
authenticated by that cookie must echo the session's CSRF token in `X-CSRF-Token`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from harness.runtime.server_config import ROLES, Role, ServerConfig, ServerToken
from harness.server._http import Request
from harness.server.problems import Problem

if TYPE_CHECKING:
    from harness.runtime import Harness

__all__ = [
    "COOKIE",
    "ENV_TOKEN",
    "Principal",
    "Session",
    "Sessions",
    "TokenBook",
    "harness_of",
    "hash_token",
    "new_token",
    "require",
]

COOKIE: Final = "harness_session"
ENV_TOKEN: Final = "HARNESS_SERVER_TOKEN"
_UNSAFE: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_CHALLENGE: Final = {"WWW-Authenticate": 'Bearer realm="harness"'}


def hash_token(token: str) -> str:
    """The SHA-256 of a token, as harness.toml keeps it (64 lowercase hex digits)."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    """A new random token (256 bits, URL-safe)."""
    return "hs_" + secrets.token_urlsafe(32)


@dataclass(frozen=True, kw_only=True, slots=True)
class Principal:
    """The caller of one request."""

    name: str
    """The token's name (`[server.tokens.NAME]`, or `env` for `HARNESS_SERVER_TOKEN`)."""
    role: Role
    """What it may do."""
    via: Literal["bearer", "cookie"]
    """How it proved who it is."""
    csrf: str | None = None
    """The session's CSRF token, for a cookie session."""


class TokenBook:
    """The tokens the server accepts, by hash.

    Args:
        config: The `[server]` table.
        env: The environment (`HARNESS_SERVER_TOKEN`).
    """

    def __init__(self, config: ServerConfig, env: Mapping[str, str]) -> None:
        self._tokens = list(config.tokens)
        given = env.get(ENV_TOKEN)
        if given:
            self._tokens.append(ServerToken(name="env", sha256=hash_token(given), role="admin"))

    def find(self, token: str) -> ServerToken | None:
        """The entry of `token`, or `None`; compares every hash in constant time."""
        digest = hash_token(token)
        found: ServerToken | None = None
        for entry in self._tokens:
            if hmac.compare_digest(entry.sha256, digest):
                found = entry
        return found


@dataclass(frozen=True, kw_only=True, slots=True)
class Session:
    """A dashboard login."""

    name: str
    """The name of the token it was opened with."""
    role: Role
    """That token's role."""
    csrf: str
    """What state-changing requests must send in `X-CSRF-Token`."""
    expires_at: float
    """When it ends (seconds since the epoch)."""


class Sessions:
    """Open dashboard sessions, by opaque id, in this process's memory.

    Args:
        ttl_s: How long a session lasts.
    """

    def __init__(self, ttl_s: float) -> None:
        self._ttl_s = ttl_s
        self._open: dict[str, Session] = {}

    def open(self, entry: ServerToken) -> str:
        """Open a session for the holder of `entry`; returns its id (the cookie's value)."""
        self._prune()
        session_id = secrets.token_urlsafe(32)
        self._open[session_id] = Session(
            name=entry.name,
            role=entry.role,
            csrf=secrets.token_urlsafe(32),
            expires_at=time.time() + self._ttl_s,
        )
        return session_id

    def get(self, session_id: str) -> Session | None:
        """The live session of that id, or `None`."""
        session = self._open.get(session_id)
        if session is None or session.expires_at <= time.time():
            self._open.pop(session_id, None)
            return None
        return session

    def close(self, session_id: str) -> None:
        """End the session (logout)."""
        self._open.pop(session_id, None)

    def _prune(self) -> None:
        now = time.time()
        for session_id in [k for k, s in self._open.items() if s.expires_at <= now]:
            del self._open[session_id]


def _bearer(request: Request) -> str | None:
    """The token of an `Authorization: Bearer` header; '' when the header is malformed."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def authenticate(request: Request, tokens: TokenBook, sessions: Sessions) -> Principal:
    """The caller, from the Bearer header or the session cookie.

    Raises:
        Problem: 401 without valid credentials; 403 for a cookie request that changes
            state without the session's CSRF token.
    """
    token = _bearer(request)
    if token is not None:
        entry = tokens.find(token) if token else None
        if entry is None:
            raise Problem(401, "the token is not valid", _CHALLENGE)
        return Principal(name=entry.name, role=entry.role, via="bearer")
    session_id = request.cookies.get(COOKIE)
    session = sessions.get(session_id) if session_id else None
    if session is None:
        detail = "the session has ended: log in again" if session_id else "a token is needed"
        raise Problem(401, f"{detail} (Authorization: Bearer TOKEN)", _CHALLENGE)
    if request.method in _UNSAFE:
        sent = request.headers.get("x-csrf-token", "")
        if not hmac.compare_digest(sent.encode(), session.csrf.encode()):
            raise Problem(403, "missing or wrong X-CSRF-Token (GET /api/me gives it)")
    return Principal(name=session.name, role=session.role, via="cookie", csrf=session.csrf)


def require(role: Role) -> Callable[[Request], Awaitable[Principal]]:
    """A route dependency: the caller must hold `role` or a stronger one.

    Raises:
        Problem: 401 (no or bad credentials), 403 (a weaker role, or no CSRF token).
    """
    needed = ROLES.index(role)

    async def check(request: Request) -> Principal:
        state = request.app.state
        principal = authenticate(request, state.tokens, state.sessions)
        request.state.principal = principal
        if ROLES.index(principal.role) < needed:
            raise Problem(
                403, f"this needs the {role} role; the token {principal.name!r} is {principal.role}"
            )
        return principal

    check.__name__ = f"require_{role}"
    return check


def harness_of(request: Request) -> Harness:
    """The `Harness` the app serves."""
    harness: Harness = request.app.state.harness
    return harness
