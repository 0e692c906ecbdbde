"""MCP server configuration (in code and in harness.toml), names, annotations and results."""

from __future__ import annotations

import base64
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest

from harness.errors import ConfigError
from harness.runtime.settings import load_settings
from harness.tools import _mcp_convert
from harness.tools._mcp_convert import local_names, parameters, result_text, side_effects
from harness.tools.mcp import MCPServerConfig


def test_import_harness_does_not_import_the_mcp_sdk() -> None:
    code = "import sys, harness, harness.tools.mcp; print('mcp' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, "exactly one of 'command' (stdio) or 'url'"),
        ({"command": "x", "url": "http://h/mcp"}, "exactly one of"),
        ({"url": "ftp://h/mcp"}, "must start with http:// or https://"),
        ({"command": " "}, "'command' must not be empty"),
        ({"command": "x", "timeout_s": 0}, "'timeout_s' must be > 0"),
        ({"command": "x", "startup_timeout_s": -1}, "'startup_timeout_s' must be > 0"),
    ],
)
def test_invalid_configs_are_refused(fields: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(expected)):
        MCPServerConfig(name="s", **fields)


def test_a_config_names_its_transport() -> None:
    assert MCPServerConfig(name="a", command="x").transport == "stdio"
    assert MCPServerConfig(name="b", url="https://h/mcp").transport == "http"
    with pytest.raises(ConfigError, match="non-empty name"):
        MCPServerConfig(name="", command="x")


def test_mcp_tables_in_harness_toml_become_server_configs(tmp_path: Path) -> None:
    (tmp_path / "harness.toml").write_text(
        "[mcp.git]\n"
        'command = "uvx"\nargs = ["mcp-server-git", "--repository", "."]\n'
        'env = { GIT_TRACE = "0" }\ncwd = "/srv"\ntimeout_s = 12\n'
        'side_effects = "destructive"\napproval = "ask"\ntool_prefix = "git_"\n\n'
        "[mcp.web]\n"
        'url = "https://tools.example/mcp"\nheaders = { Authorization = "Bearer x" }\n'
    )
    servers = load_settings(tmp_path).mcp_servers
    assert servers["git"] == MCPServerConfig(
        name="git",
        command="uvx",
        args=("mcp-server-git", "--repository", "."),
        env={"GIT_TRACE": "0"},
        cwd=Path("/srv"),
        timeout_s=12.0,
        side_effects="destructive",
        approval="ask",
        tool_prefix="git_",
    )
    assert servers["web"].url == "https://tools.example/mcp"
    assert servers["web"].headers == {"Authorization": "Bearer x"}
    assert servers["web"].transport == "http"


def test_no_file_means_no_servers(tmp_path: Path) -> None:
    assert dict(load_settings(tmp_path).mcp_servers) == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[mcp.x]\nargs = []\n", "key 'mcp.x': Value error, give exactly one of 'command'"),
        ('[mcp.x]\ncommand = "a"\nurl = "http://h"\n', "key 'mcp.x': Value error"),
        ('[mcp.x]\ncommand = "a"\ntimeout_s = 0\n', "key 'mcp.x.timeout_s'"),
        ('[mcp.x]\ncommand = "a"\nside_effects = "some"\n', "key 'mcp.x.side_effects'"),
        ('[mcp.x]\ncommand = "a"\nshell = true\n', "key 'mcp.x.shell'"),
        ('[mcp.x]\nurl = "localhost:3000"\n', "key 'mcp.x.url'"),
        ('[mcp.x]\ncommand = ""\n', "key 'mcp.x': MCP server 'x': 'command' must not be empty"),
    ],
)
def test_bad_mcp_tables_name_the_file_and_the_key(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "harness.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path)
    assert str(path) in str(caught.value)
    assert expected in str(caught.value)


def test_names_are_made_valid_unique_and_short() -> None:
    long = "x" * 80
    names = local_names(["read file", "read_file", "a.b/c", long, long + "y", "", "ok-1", "ok-1"])
    assert names[1] == "read_file"
    assert names[0].startswith("read_file_")
    assert names[2] == "a_b_c"
    assert all(len(name) <= 64 for name in names)
    assert names[3] != names[4]
    assert names[5] == "tool"
    assert names[6] == "ok-1"
    assert names[7].startswith("ok-1_")
    assert len(set(names)) == len(names)
    assert local_names(["status"], prefix="git_") == ["git_status"]
    assert local_names(["a b"] * 3) == local_names(["a b"] * 3)


@pytest.mark.parametrize(
    ("hints", "expected"),
    [
        (None, "mutating"),
        ({}, "mutating"),
        ({"title": "only a title"}, "mutating"),
        ({"read_only_hint": True}, "none"),
        ({"read_only_hint": True, "destructive_hint": True}, "none"),
        ({"read_only_hint": False}, "destructive"),
        ({"destructive_hint": True, "idempotent_hint": True}, "destructive"),
        ({"destructive_hint": False}, "mutating"),
        ({"destructive_hint": False, "idempotent_hint": True}, "idempotent"),
        ({"idempotent_hint": True}, "destructive"),
    ],
)
def test_side_effects_follow_the_mcp_annotation_defaults(
    hints: dict[str, Any] | None, expected: str
) -> None:
    annotations = None if hints is None else types.ToolAnnotations(**hints)
    assert side_effects(annotations, "mutating") == expected


def test_parameters_drop_the_dialect_and_default_to_an_object() -> None:
    published = {"$schema": "http://json-schema.org/draft-07/schema#", "properties": {}}
    assert parameters(published) == {"properties": {}, "type": "object"}
    assert "$schema" in published


def tool(name: str, schema: dict[str, Any], **extra: Any) -> types.Tool:
    return types.Tool(name=name, input_schema=schema, **extra)


class FakeConnection:
    def __init__(self, *tools: types.Tool) -> None:
        self.tools = tools

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return types.CallToolResult(content=[], is_error=True)


def test_tools_harness_cannot_offer_are_skipped_with_the_reason() -> None:
    connection = FakeConnection(
        tool("good", {"type": "object"}, title="Good tool"),
        tool("array", {"type": "array"}, description="Takes a list."),
        tool("broken", {"type": "object", "properties": {"n": {"type": 5}}}, description="x"),
    )
    built = _mcp_convert.build_tools(connection, MCPServerConfig(name="s", command="x"))
    assert [spec.name for spec in built.tools] == ["good"]
    assert built.tools[0].description == "Good tool"
    assert set(built.skipped) == {"array", "broken"}
    assert '"type": "object"' in built.skipped["array"]


async def test_an_error_without_text_still_says_what_happened() -> None:
    built = _mcp_convert.build_tools(
        FakeConnection(tool("t", {"type": "object"})), MCPServerConfig(name="s", command="x")
    )
    spec = built.tools[0]
    assert spec.description == "The tool 't' of MCP server 's'."
    with pytest.raises(Exception, match="reported an error without a message"):
        await spec.function()


def test_results_keep_text_and_summarise_the_rest() -> None:
    blob = base64.b64encode(bytes(10)).decode()
    result = types.CallToolResult(
        content=[
            types.EmbeddedResource(
                resource=types.BlobResourceContents(uri="x:/b", blob=blob, mime_type="image/gif")
            ),
            types.ResourceLink(name="doc", uri="x:/doc", description=" A doc. "),
        ],
        structured_content={"n": 1},
    )
    assert result_text(result) == (
        '{"n": 1}\n[resource: x:/b, image/gif, 10 bytes]\n[resource link: doc <x:/doc>, A doc.]'
    )
    assert result_text(types.CallToolResult(content=[])) == ""
    with_text = types.CallToolResult(content=[types.TextContent(text="t")], structured_content=[1])
    assert result_text(with_text) == "t"
