"""`[server]` of harness.toml as plain data: who may use `harness serve`, and its limits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ROLES", "Role", "ServerConfig", "ServerToken"]

Role = Literal["read", "operate", "admin"]
"""What a token may do: `read` looks, `operate` also steers runs, `admin` also changes the
server's own settings."""

ROLES: tuple[Role, ...] = ("read", "operate", "admin")
"""The roles, weakest first: each may do what the ones before it may."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ServerToken:
    """One `[server.tokens.NAME]` table: a token known by its hash, never by its text."""

    name: str
    """Whom it was given to (the table's name); access logs name it."""
    sha256: str
    """The SHA-256 of the token, as 64 lowercase hex digits."""
    role: Role
    """What it may do."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ServerConfig:
    """The `[server]` table."""

    tokens: tuple[ServerToken, ...] = ()
    """The tokens it accepts (besides `HARNESS_SERVER_TOKEN`, an admin token)."""
    cors_origins: tuple[str, ...] = ()
    """Origins allowed to call the API from a browser page of theirs; none by default."""
    max_body_bytes: int = 1 << 20
    """Requests with a larger body are refused (413)."""
    keepalive_s: float = 15.0
    """Seconds between `: keep-alive` comments on an idle event stream."""
    session_hours: float = 12.0
    """How long a dashboard login lasts."""
    live_steps: bool = True
    """The runs `harness serve` executes commit each step before its model call, so that
    their event streams show the model called (and a safe tool's result) while it thinks."""
    max_streams: int = 1000
    """Event streams open at once, all callers together; one more is refused (503)."""
    max_streams_per_token: int = 100
    """Event streams one token (or session) may hold open at once; one more is refused
    (429): a client that leaks its connections cannot take every stream."""
