"""The one home of the `mcp` SDK: start or reach a server, open a session, call tools.

Every SDK and transport error is translated here: at start-up into `ConfigError`, during
a tool call into `ToolError` that tells the model what happened and what to do instead.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
from collections.abc import Sequence
from contextlib import AsyncExitStack
from importlib import metadata
from typing import Any, Final, NoReturn, TextIO, cast

import anyio
import httpx2
import mcp.types as types
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from harness.errors import ConfigError, ToolError
from harness.tools.mcp import MCPServerConfig

__all__ = ["MCPConnection", "ServerTask", "connect"]

_log = logging.getLogger("harness.tools.mcp")

_GRACE_S: Final = 1.0
"""Extra seconds the SDK waits for a call after the tool's own timeout has run out."""

_SSE_READ_S: Final = 300.0
"""Seconds an HTTP response stream may stay silent (a server may hold it open)."""

_MAX_PAGES: Final = 100
"""Pages of `tools/list` read at most, so that a server that loops cannot hang the start."""

_LOST: Final = (
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
    httpx2.HTTPError,
    OSError,
)
"""Errors that mean the connection to the server is gone."""


class MCPConnection:
    """An initialised session with one MCP server, and the tools it listed.

    Args:
        config: How the server was reached.
        session: The initialised session.
        tools: The tools the server listed.
    """

    def __init__(
        self, config: MCPServerConfig, session: ClientSession, tools: Sequence[types.Tool]
    ) -> None:
        self.config = config
        self.tools = tuple(tools)
        self._session = session
        self._lost: str | None = None

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call one tool by the server's name for it.

        Raises:
            ToolError: The server is gone, did not answer in time, or refused the call.
        """
        if self._lost is not None:
            raise ToolError(self._lost, hint=self._unavailable_hint())
        try:
            return await self._session.call_tool(
                tool, arguments, read_timeout_seconds=self.config.timeout_s + _GRACE_S
            )
        except MCPError as exc:
            self._raise_for(tool, exc)
        except _LOST as exc:
            self._raise_lost(f"lost the connection during the call to {tool!r} ({_brief(exc)})")

    def _raise_for(self, tool: str, exc: MCPError) -> NoReturn:
        server = self.config.name
        if exc.code == types.CONNECTION_CLOSED:
            self._raise_lost(
                f"closed the connection during the call to {tool!r}: "
                "the server exited, crashed or was disconnected"
            )
        if exc.code == types.REQUEST_TIMEOUT:
            raise ToolError(
                f"MCP server {server!r} did not answer the call to {tool!r} "
                f"within {self.config.timeout_s:g} s.",
                hint="Try a smaller or faster step, or reach the goal another way.",
            ) from exc
        raise ToolError(
            f"MCP server {server!r} refused the call to {tool!r}: {exc.message}",
            hint="Check the arguments against the tool's parameters, or use another tool.",
        ) from exc

    def close(self, what: str) -> None:
        """Fail every later call at once, saying that the server `what` (e.g. "crashed")."""
        if self._lost is None:
            self._lost = f"MCP server {self.config.name!r} is unavailable: it {what}."

    def _raise_lost(self, what: str) -> NoReturn:
        self.close(what)
        raise ToolError(
            f"MCP server {self.config.name!r} is unavailable: it {what}. "
            "Whether the call had any effect is unknown.",
            hint=self._unavailable_hint(),
        )

    def _unavailable_hint(self) -> str:
        return (
            f"The tools of MCP server {self.config.name!r} cannot be used for the rest of "
            "this run. Do not call them again; reach the goal another way."
        )


class ServerTask:
    """Runs the connection to one server in a task of its own.

    The SDK's transports run task groups that must be entered and left in one task, and
    that cancel that task when a transport fails (an HTTP server gone mid-session). Kept
    in a task of their own, they can fail without cancelling the agent that uses the
    tools; callers in any task talk to the session through its streams.

    Args:
        config: How to reach the server.
        errlog: Where a stdio server's stderr goes.
    """

    def __init__(self, config: MCPServerConfig, *, errlog: TextIO) -> None:
        self._config = config
        self._errlog = errlog
        self._stop = asyncio.Event()
        self._connection: MCPConnection | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> MCPConnection:
        """Start the task and wait until the server's tools are listed.

        Raises:
            ConfigError: The server could not be started, reached or initialised.
        """
        ready = asyncio.get_running_loop().create_future()
        name = f"mcp-server-{self._config.name}"
        task = self._task = asyncio.create_task(self._hold(ready), name=name)
        try:
            await asyncio.wait((ready, task), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # the caller gave up: do not leave a server starting
            task.cancel()
            await self.stop()
            raise
        if self._connection is not None:
            return self._connection
        error = None if task.cancelled() else task.exception()
        raise error or ConfigError(f"MCP server {self._config.name!r} stopped while starting.")

    async def stop(self) -> None:
        """Shut the server down and wait for the task to end; never raises its errors."""
        self._stop.set()
        task = self._task
        if task is None:
            return
        await asyncio.wait((task,))  # unlike awaiting the task, never raises its outcome
        error = None if task.cancelled() else task.exception()
        if error is not None:
            _log.warning("MCP server %r ended with an error: %s", self._config.name, _brief(error))

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        try:
            async with AsyncExitStack() as stack:
                self._connection = await connect(self._config, stack, errlog=self._errlog)
                ready.set_result(None)
                await self._stop.wait()
        except Exception as exc:
            if self._connection is None:  # the SDK's task groups wrap it in a group
                raise ConfigError(
                    f"MCP server {self._config.name!r} could not be started "
                    f"({_where(self._config)}): {_brief(exc)}"
                ) from exc
            raise
        finally:
            if self._connection is not None:
                self._connection.close("was disconnected or stopped")


async def connect(
    config: MCPServerConfig, stack: AsyncExitStack, *, errlog: TextIO
) -> MCPConnection:
    """Start or reach the server, initialise a session on `stack` and list the tools.

    The caller closes `stack`, in the task that called `connect`, to shut the server down.
    Errors come as the SDK raises them, often wrapped in exception groups.
    """
    read, write = await _open_transport(config, stack, errlog)
    session = await stack.enter_async_context(
        ClientSession(
            read, write, read_timeout_seconds=config.startup_timeout_s, client_info=_client_info()
        )
    )
    await session.initialize()
    return MCPConnection(config, session, await _list_tools(session))


async def _open_transport(
    config: MCPServerConfig, stack: AsyncExitStack, errlog: TextIO
) -> tuple[Any, Any]:
    if config.command is not None:
        parameters = StdioServerParameters(
            command=config.command,
            args=list(config.args),
            env=dict(config.env) or None,
            cwd=config.cwd,
        )
        return await stack.enter_async_context(stdio_client(parameters, errlog=errlog))
    assert config.url is not None
    timeout = httpx2.Timeout(config.timeout_s, read=max(_SSE_READ_S, config.timeout_s + _GRACE_S))
    client = await stack.enter_async_context(
        httpx2.AsyncClient(headers=dict(config.headers), timeout=timeout)
    )
    return await stack.enter_async_context(streamable_http_client(config.url, http_client=client))


async def _list_tools(session: ClientSession) -> list[types.Tool]:
    listing = await session.list_tools()
    tools = list(listing.tools)
    for _ in range(_MAX_PAGES):
        if not listing.next_cursor:
            break
        page = types.PaginatedRequestParams(cursor=listing.next_cursor)
        listing = await session.list_tools(params=page)
        tools.extend(listing.tools)
    return tools


def _client_info() -> types.Implementation:
    try:
        version = metadata.version("harness")
    except metadata.PackageNotFoundError:
        version = "0"
    return types.Implementation(name="harness", version=version)


def _where(config: MCPServerConfig) -> str:
    if config.url is not None:
        return config.url
    return shlex.join([config.command or "", *config.args])


def _brief(exc: BaseException) -> str:
    """One line naming the innermost error, unwrapping exception groups."""
    while isinstance(exc, BaseExceptionGroup):
        group = cast(BaseExceptionGroup[BaseException], exc)
        exc = group.exceptions[0]
    text = str(exc).strip().splitlines()
    detail = text[0][:300] if text else ""
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
