"""A small MCP server (stdio) whose tools misbehave on purpose, for the MCP tests.

Run as `python flaky_server.py`. Built on the SDK's `MCPServer` (FastMCP in mcp 1.x).
"""

from __future__ import annotations

import base64
import os
import time

import anyio
import mcp.types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

server = MCPServer("flaky")

_PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(24)).decode()


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def crash(after_s: float = 0.0) -> str:
    """Exit the whole server process in the middle of the call."""
    time.sleep(after_s)
    os._exit(1)


@server.tool()
async def hang() -> str:
    """Never answer (until the call is cancelled)."""
    await anyio.sleep_forever()
    return "unreachable"


@server.tool()
def refuse(reason: str) -> str:
    """Fail with a message, as an isError result."""
    raise ToolError(f"refused: {reason}")


@server.tool()
def reject() -> str:
    """Answer with a JSON-RPC error instead of a result."""
    raise MCPError(code=types.INVALID_PARAMS, message="no such record")


@server.tool()
def mixed() -> types.CallToolResult:
    """Return one block of every content type."""
    return types.CallToolResult(
        content=[
            types.TextContent(text="first"),
            types.ImageContent(data=_PIXEL, mime_type="image/png"),
            types.AudioContent(data=base64.b64encode(b"RIFF").decode(), mime_type="audio/wav"),
            types.EmbeddedResource(
                resource=types.TextResourceContents(uri="file:///notes.txt", text="note text")
            ),
            types.EmbeddedResource(
                resource=types.BlobResourceContents(
                    uri="file:///data.bin", blob=base64.b64encode(b"12345").decode()
                )
            ),
            types.ResourceLink(
                name="report", uri="file:///report.pdf", mime_type="application/pdf"
            ),
        ]
    )


@server.tool()
def structured_only() -> types.CallToolResult:
    """Return structured content and no blocks."""
    return types.CallToolResult(content=[], structured_content={"answer": 42, "unit": "m"})


@server.tool(name="odd name/with.dots")
def odd_name() -> str:
    """A tool whose name harness must rewrite."""
    return "odd"


if __name__ == "__main__":
    server.run("stdio")
