"""MCP servers as tools: each server's published tools become harness `ToolSpec`s.

A server is started (stdio) or reached (streamable HTTP) by an `MCPToolSource`, an async
context manager that holds the connection for as long as the tools are used:

```python
git = MCPServerConfig(name="git", command="uvx", args=("mcp-server-git",))
async with MCPToolSource(git) as source:
    result = await Agent(model="local", tools=[*source.tools, "bash"]).run("What changed?")
```

Arguments are validated by harness against each tool's published input schema before
they reach the server. A tool result with `isError` becomes a `ToolError`; a server that
crashes, disconnects or hangs ends the call with a `tool` message, never a crashed run.

The `mcp` SDK is imported only when a source is entered, so that importing harness stays fast.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Final, Literal, Self, TextIO

from harness.errors import ConfigError
from harness.tools.spec import Approval, SideEffects, ToolSpec

if TYPE_CHECKING:
    from harness.tools._mcp_client import MCPConnection, ServerTask

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT_S",
    "DEFAULT_TIMEOUT_S",
    "MCPServerConfig",
    "MCPToolSource",
]

DEFAULT_TIMEOUT_S: Final = 30.0
"""Seconds one MCP tool call may take by default."""

DEFAULT_STARTUP_TIMEOUT_S: Final = 30.0
"""Seconds an MCP server may take by default to start and list its tools."""

_EMPTY: Final[Mapping[str, str]] = MappingProxyType({})


@dataclass(frozen=True, kw_only=True, slots=True)
class MCPServerConfig:
    """How to reach one MCP server, and the defaults for its tools.

    Give either `command` (a server started as a subprocess, spoken to over stdio) or
    `url` (a server reached over streamable HTTP), not both.

    Raises:
        ConfigError: Neither or both of `command` and `url`, or another invalid value.
    """

    name: str
    """The server's name in harness: in messages, logs and `harness.toml` (`[mcp.NAME]`)."""
    command: str | None = None
    """Executable that starts a stdio server, e.g. `"npx"` or `"/usr/bin/python3"`."""
    args: tuple[str, ...] = ()
    """Arguments for `command`."""
    env: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    """Environment variables for the server, added to a minimal inherited set (PATH, HOME …)."""
    cwd: Path | None = None
    """Working directory of the server process; `None` keeps the current one."""
    url: str | None = None
    """Endpoint of a streamable HTTP server, e.g. `"http://127.0.0.1:3001/mcp"`."""
    headers: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    """HTTP headers sent with every request to `url` (e.g. authorization)."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    """Seconds one tool call may take."""
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S
    """Seconds the server may take to start, answer the handshake and list its tools."""
    side_effects: SideEffects = "mutating"
    """Side effects of tools that publish no annotations (annotations win when present)."""
    approval: Approval = "auto"
    """Approval policy for every tool of this server."""
    tool_prefix: str = ""
    """Prepended to each tool name, e.g. `"git_"`, to keep names of several servers apart."""

    def __post_init__(self) -> None:
        where = f"MCP server {self.name!r}"
        if not self.name.strip():
            raise ConfigError("An MCP server needs a non-empty name.")
        if (self.command is None) == (self.url is None):
            raise ConfigError(f"{where}: give exactly one of 'command' (stdio) or 'url' (HTTP).")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}: 'url' must start with http:// or https://.")
        if self.command is not None and not self.command.strip():
            raise ConfigError(f"{where}: 'command' must not be empty.")
        for key in ("timeout_s", "startup_timeout_s"):
            if not getattr(self, key) > 0:
                raise ConfigError(f"{where}: {key!r} must be > 0 seconds.")

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """`"stdio"` or `"http"`."""
        return "stdio" if self.command is not None else "http"


class MCPToolSource:
    """A running MCP server whose tools are available as `ToolSpec`s while it is entered.

    Entering starts (or connects to) the server, initialises the MCP session and lists the
    tools; leaving shuts the server down. The connection lives in a task of its own, so a
    failing transport never cancels the caller, and the source may be entered and left in
    different tasks. The tools may be called from any task of the same event loop, also
    concurrently, while the source is open; afterwards every call fails with a `ToolError`.

    Args:
        config: How to reach the server.
        errlog: Where a stdio server's stderr goes; `None` is `sys.stderr`.
    """

    def __init__(self, config: MCPServerConfig, *, errlog: TextIO | None = None) -> None:
        self._config = config
        self._errlog = errlog
        self._server: ServerTask | None = None
        self._tools: tuple[ToolSpec, ...] = ()
        self._remote: dict[str, str] = {}
        self._skipped: dict[str, str] = {}

    @property
    def config(self) -> MCPServerConfig:
        """How the server is reached."""
        return self._config

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """The server's tools, in the order the server listed them (empty until entered)."""
        return self._tools

    @property
    def remote_names(self) -> Mapping[str, str]:
        """The server's own name for each tool, by harness tool name."""
        return MappingProxyType(self._remote)

    @property
    def skipped(self) -> Mapping[str, str]:
        """Tools the server listed that harness cannot offer, with the reason, by server name."""
        return MappingProxyType(self._skipped)

    async def __aenter__(self) -> Self:
        if self._server is not None:
            raise ConfigError(f"MCP server {self._config.name!r} is already open.")
        from harness.tools import _mcp_client

        server = self._server = _mcp_client.ServerTask(
            self._config, errlog=self._errlog or sys.stderr
        )
        try:
            self._build(await server.start())
        except BaseException:
            self._server = None
            await server.stop()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        server, self._server = self._server, None
        self._tools = ()
        if server is not None:
            await server.stop()

    def _build(self, connection: MCPConnection) -> None:
        from harness.tools import _mcp_convert

        built = _mcp_convert.build_tools(connection, self._config)
        self._tools = built.tools
        self._remote = built.remote_names
        self._skipped = built.skipped
