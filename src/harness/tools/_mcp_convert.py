"""From MCP tools to harness `ToolSpec`s, and from MCP tool results to text for the model."""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Protocol

import mcp.types as types

from harness.errors import ToolDefinitionError, ToolError
from harness.tools.mcp import MCPServerConfig
from harness.tools.spec import SideEffects, ToolSpec
from harness.tools.validation import validator_for

__all__ = [
    "BuiltTools",
    "build_tools",
    "local_names",
    "parameters",
    "result_text",
    "side_effects",
]

_log = logging.getLogger("harness.tools.mcp")

_MAX_NAME: Final = 64
_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NOT_NAME: Final = re.compile(r"[^A-Za-z0-9_-]")
_HASH_CHARS: Final = 8

Call = Callable[[str, dict[str, Any]], Awaitable[types.CallToolResult]]
"""Calls one tool by the server's name with the given arguments."""


class _Connection(Protocol):
    """What `build_tools` needs of a connection (see `_mcp_client.MCPConnection`)."""

    @property
    def tools(self) -> tuple[types.Tool, ...]: ...

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class BuiltTools:
    """The specs made from one server's tools."""

    tools: tuple[ToolSpec, ...]
    """The specs, in the order the server listed its tools."""
    remote_names: dict[str, str]
    """The server's name of each tool, by harness name."""
    skipped: dict[str, str]
    """Why each tool harness cannot offer was left out, by the server's name."""


def build_tools(connection: _Connection, config: MCPServerConfig) -> BuiltTools:
    """Make a `ToolSpec` of every listed tool that harness can offer to a model."""
    names = local_names((tool.name for tool in connection.tools), config.tool_prefix)
    specs: list[ToolSpec] = []
    remote: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for local, tool in zip(names, connection.tools, strict=True):
        try:
            spec = _spec(local, tool, config, connection.call)
            validator_for(spec.parameters, tool_name=spec.name)
        except ToolDefinitionError as exc:
            _log.warning("MCP server %r: tool %r skipped: %s", config.name, tool.name, exc)
            skipped[tool.name] = str(exc)
            continue
        specs.append(spec)
        remote[local] = tool.name
    return BuiltTools(tools=tuple(specs), remote_names=remote, skipped=skipped)


def _spec(local: str, tool: types.Tool, config: MCPServerConfig, call: Call) -> ToolSpec:
    return ToolSpec.from_schema(
        name=local,
        description=_description(tool, config.name),
        parameters=parameters(tool.input_schema),
        function=_tool_function(call, tool.name, config.name),
        side_effects=side_effects(tool.annotations, config.side_effects),
        timeout=config.timeout_s,
        approval=config.approval,
    )


def _tool_function(call: Call, remote: str, server: str) -> Callable[..., Awaitable[str]]:
    async def call_mcp_tool(**arguments: Any) -> str:
        result = await call(remote, arguments)
        text = result_text(result)
        if result.is_error:
            raise ToolError(
                text or f"the MCP server {server!r} reported an error without a message",
                hint="Read the error, change the arguments or the approach, and try again.",
            )
        return text

    call_mcp_tool.__name__ = f"mcp_{server}_{remote}"
    return call_mcp_tool


def local_names(remote: Iterable[str], prefix: str = "") -> list[str]:
    """Harness names for a server's tools: valid, unique, at most 64 characters.

    Valid names are kept. In the others, characters outside `A-Z a-z 0-9 _ -` become `_`;
    names then too long or taken are shortened and made unique with a hash of the
    server's name for the tool.

    Args:
        remote: The server's tool names, in order.
        prefix: Put before each name.

    Returns:
        One harness name per server name, in the same order.
    """
    wanted = [prefix + name for name in remote]
    kept = {name for name in wanted if _NAME.fullmatch(name)}
    taken: set[str] = set()
    names: list[str] = []
    for name in wanted:
        local = name
        if name not in kept or name in taken:
            local = _NOT_NAME.sub("_", name) or "tool"
            if local in kept or local in taken or len(local) > _MAX_NAME:
                local = _unique(local, name, taken | kept)
        taken.add(local)
        names.append(local)
    return names


def _unique(local: str, remote: str, taken: set[str]) -> str:
    for attempt in range(1000):
        digest = hashlib.sha256(f"{attempt}:{remote}".encode()).hexdigest()[:_HASH_CHARS]
        candidate = f"{local[: _MAX_NAME - _HASH_CHARS - 1]}_{digest}"
        if candidate not in taken:
            return candidate
    raise ToolDefinitionError(f"Cannot find a unique tool name for {remote!r}.")  # pragma: no cover


def side_effects(annotations: types.ToolAnnotations | None, default: SideEffects) -> SideEffects:
    """Read a tool's side effects from its MCP annotations, as the MCP spec defines them.

    A read-only tool changes nothing; otherwise a tool is destructive unless it says it
    is not (the spec's default), and then idempotent or merely mutating. Without hints
    the server's configured default applies.
    """
    if annotations is None:
        return default
    hints = (annotations.read_only_hint, annotations.destructive_hint, annotations.idempotent_hint)
    if all(hint is None for hint in hints):
        return default
    if annotations.read_only_hint:
        return "none"
    if annotations.destructive_hint is not False:
        return "destructive"
    return "idempotent" if annotations.idempotent_hint else "mutating"


def parameters(input_schema: dict[str, Any]) -> dict[str, Any]:
    """The arguments schema harness shows the model and validates against.

    `$schema` goes (harness validates as draft 2020-12 and some providers reject the key);
    a schema without a `type` describes an arguments object.
    """
    schema = copy.deepcopy(input_schema)
    schema.pop("$schema", None)
    schema.setdefault("type", "object")
    return schema


def _description(tool: types.Tool, server: str) -> str:
    annotated = tool.annotations.title if tool.annotations else None
    for text in (tool.description, tool.title, annotated):
        if text and text.strip():
            return text.strip()
    return f"The tool {tool.name!r} of MCP server {server!r}."


def result_text(result: types.CallToolResult) -> str:
    """The text of a tool result, as the model reads it.

    Text blocks and the text of embedded resources are kept; images, audio, binary
    resources and resource links are summarised in one line each. Structured content
    is shown as JSON when no block carries text.
    """
    parts = [_block_text(block) for block in result.content]
    if result.structured_content is not None and not any(map(_has_text, result.content)):
        structured = json.dumps(result.structured_content, ensure_ascii=False)
        parts.insert(0, structured)
    return "\n".join(part for part in parts if part)


def _has_text(block: types.ContentBlock) -> bool:
    if isinstance(block, types.TextContent):
        return True
    return isinstance(block, types.EmbeddedResource) and isinstance(
        block.resource, types.TextResourceContents
    )


def _block_text(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        return f"[{block.type}: {block.mime_type}, {_decoded_size(block.data)} bytes]"
    if isinstance(block, types.EmbeddedResource):
        return _resource_text(block.resource)
    return _link_text(block)


def _resource_text(resource: types.TextResourceContents | types.BlobResourceContents) -> str:
    if isinstance(resource, types.TextResourceContents):
        return f"[resource: {resource.uri}]\n{resource.text}"
    mime = resource.mime_type or "binary"
    return f"[resource: {resource.uri}, {mime}, {_decoded_size(resource.blob)} bytes]"


def _link_text(link: types.ResourceLink) -> str:
    details = ", ".join(
        part for part in (link.mime_type, link.description and link.description.strip()) if part
    )
    return f"[resource link: {link.name} <{link.uri}>{', ' + details if details else ''}]"


def _decoded_size(data: str) -> int:
    """Bytes encoded by base64 `data`, without decoding it."""
    compact = "".join(data.split())
    return max(0, len(compact) * 3 // 4 - compact[-2:].count("="))
