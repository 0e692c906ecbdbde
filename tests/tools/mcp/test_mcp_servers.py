"""One contract, run against real MCP servers from PyPI and npm, over stdio and HTTP.

Each server is started once for this module. Its tools go through `Toolset.execute`, the
path the agent loop takes: a real call succeeds, arguments that break the published
schema are refused before they reach the server, and an `isError` result is a tool_error.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mcp_test_support import descendants, start_everything_http, stop, wait_for_exit

from harness.core import Limits, ToolCall
from harness.tools import SideEffects, Toolset, ToolSpec
from harness.tools.mcp import MCPServerConfig, MCPToolSource

pytestmark = pytest.mark.asyncio(loop_scope="module")

Setup = Callable[[pytest.FixtureRequest, Path, ExitStack], MCPServerConfig]


@dataclass(frozen=True)
class Case:
    """A server and the calls that exercise it; `{root}` in arguments is its temp dir."""

    id: str
    setup: Setup
    ok: tuple[str, dict[str, Any], str]
    invalid: tuple[str, dict[str, Any]]
    error: tuple[str, dict[str, Any], str]
    required: Mapping[str, frozenset[str]]
    side_effects: Mapping[str, SideEffects] = field(default_factory=lambda: {})


def python_server(module: str, *args: str) -> Setup:
    def setup(request: pytest.FixtureRequest, root: Path, cleanup: ExitStack) -> MCPServerConfig:
        pytest.importorskip(module)
        command = (sys.executable, "-m", module, *(arg.format(root=root) for arg in args))
        return MCPServerConfig(name=module, command=command[0], args=command[1:])

    return setup


def git_server(request: pytest.FixtureRequest, root: Path, cleanup: ExitStack) -> MCPServerConfig:
    repo = root / "repo"
    repo.mkdir()
    (repo / "notes.txt").write_text("hello\n")
    for command in (
        ["init", "-q", "-b", "main"],
        ["add", "notes.txt"],
        ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "first notes"],
    ):
        subprocess.run(["git", *command], cwd=repo, check=True)
    return python_server("mcp_server_git", "--repository", "{root}/repo")(request, root, cleanup)


def node_server(package: str, *args: str) -> Setup:
    def setup(request: pytest.FixtureRequest, root: Path, cleanup: ExitStack) -> MCPServerConfig:
        scope: Path = request.getfixturevalue("npm_servers")
        node: str = request.getfixturevalue("node")
        index = str(scope / package / "dist" / "index.js")
        filled = tuple(arg.format(root=root) for arg in args)
        return MCPServerConfig(name=package, command=node, args=(index, *filled))

    return setup


def everything_http(
    request: pytest.FixtureRequest, root: Path, cleanup: ExitStack
) -> MCPServerConfig:
    scope: Path = request.getfixturevalue("npm_servers")
    process, url = start_everything_http(request.getfixturevalue("node"), scope)
    cleanup.callback(stop, process)
    return MCPServerConfig(name="everything-http", url=url, headers={"X-Test": "harness"})


def files_server(request: pytest.FixtureRequest, root: Path, cleanup: ExitStack) -> MCPServerConfig:
    (root / "docs").mkdir()
    (root / "docs" / "notes.txt").write_text("the notes say hello\n")
    return node_server("server-filesystem", "{root}/docs")(request, root, cleanup)


EVERYTHING = {
    "ok": ("get-sum", {"a": 2, "b": 3}, "The sum of 2 and 3 is 5."),
    "invalid": ("get-sum", {"a": "two", "b": 3}),
    "error": ("get-resource-reference", {"resourceId": -1}, "Invalid resourceId: -1"),
    "required": {"get-sum": frozenset({"a", "b"}), "echo": frozenset({"message"})},
    "side_effects": {"get-sum": "none", "toggle-simulated-logging": "mutating"},
}

CASES = [
    Case(
        id="time",
        setup=python_server("mcp_server_time"),
        ok=("get_current_time", {"timezone": "Europe/Paris"}, '"timezone": "Europe/Paris"'),
        invalid=("get_current_time", {"timezone": 5}),
        error=("get_current_time", {"timezone": "Mars/Olympus"}, "Invalid timezone"),
        required={"get_current_time": frozenset({"timezone"})},
        side_effects={"get_current_time": "none", "convert_time": "none"},
    ),
    Case(
        id="git",
        setup=git_server,
        ok=("git_log", {"repo_path": "{root}/repo"}, "Message: first notes"),
        invalid=("git_log", {"repo_path": "{root}/repo", "max_count": "ten"}),
        error=("git_checkout", {"repo_path": "{root}/repo", "branch_name": "nope"}, "'nope'"),
        required={"git_commit": frozenset({"repo_path", "message"})},
        side_effects={
            "git_status": "none",
            "git_add": "idempotent",
            "git_commit": "mutating",
            "git_reset": "destructive",
        },
    ),
    Case(id="everything-stdio", setup=node_server("server-everything", "stdio"), **EVERYTHING),
    Case(id="everything-http", setup=everything_http, **EVERYTHING),
    Case(
        id="filesystem",
        setup=files_server,
        ok=("read_text_file", {"path": "{root}/docs/notes.txt"}, "the notes say hello"),
        invalid=("read_text_file", {"path": ["{root}/docs/notes.txt"]}),
        error=("read_text_file", {"path": "/etc/hostname"}, "outside allowed directories"),
        required={"write_file": frozenset({"path", "content"})},
        side_effects={"read_text_file": "none", "write_file": "destructive"},
    ),
]


@dataclass
class Served:
    case: Case
    source: MCPToolSource
    toolset: Toolset
    root: Path
    reached: list[str]

    async def execute(self, name: str, arguments: dict[str, Any]) -> Any:
        filled = fill(arguments, self.root)
        call = ToolCall(id=f"call_{name}", name=name, arguments=json.dumps(filled))
        return await self.toolset.execute(call, limits=Limits(tool_timeout=20.0))


def fill(value: Any, root: Path) -> Any:
    if isinstance(value, str):
        return value.format(root=root)
    if isinstance(value, list):
        return [fill(item, root) for item in value]
    if isinstance(value, dict):
        return {key: fill(item, root) for key, item in value.items()}
    return value


def counted(spec: ToolSpec, reached: list[str]) -> ToolSpec:
    """The same tool, noting each call that gets past validation to the server."""
    function = spec.function

    async def forward(**arguments: Any) -> Any:
        reached.append(spec.name)
        return await function(**arguments)

    return dataclasses.replace(spec, function=forward)


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=CASES, ids=lambda c: c.id)
async def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Served]:
    case: Case = request.param
    root = tmp_path_factory.mktemp(case.id)
    with ExitStack() as cleanup:
        config = case.setup(request, root, cleanup)
        before = descendants()
        async with MCPToolSource(config) as source:
            reached: list[str] = []
            toolset = Toolset(counted(spec, reached) for spec in source.tools)
            yield Served(case, source, toolset, root, reached)
        assert wait_for_exit(before) == set(), "closing the source left the server running"


async def test_tools_are_listed_with_their_published_schemas(served: Served) -> None:
    assert served.source.skipped == {}
    for name, required in served.case.required.items():
        spec = served.toolset.get(name)
        assert spec is not None, f"{name} not among {served.toolset.names}"
        assert spec.parameters["type"] == "object"
        assert "$schema" not in spec.parameters
        assert set(spec.required) == required
        assert required <= set(spec.parameters["properties"])
        assert spec.description.strip()
        assert served.source.remote_names[name] == name


async def test_side_effects_come_from_the_annotations(served: Served) -> None:
    found = {name: served.toolset.get(name) for name in served.case.side_effects}
    assert {name: spec.side_effects for name, spec in found.items() if spec} == dict(
        served.case.side_effects
    )


async def test_a_real_call_succeeds(served: Served) -> None:
    name, arguments, expected = served.case.ok
    outcome = await served.execute(name, arguments)
    assert outcome.status == "ok", outcome.output
    assert expected in outcome.output
    assert outcome.message.role == "tool"


async def test_arguments_that_break_the_schema_never_reach_the_server(served: Served) -> None:
    name, arguments = served.case.invalid
    reached_before = len(served.reached)
    outcome = await served.execute(name, arguments)
    assert outcome.status == "invalid_arguments", outcome.output
    assert len(served.reached) == reached_before
    assert f"Parameters of {name!r}" in outcome.output


async def test_an_is_error_result_is_a_tool_error(served: Served) -> None:
    name, arguments, expected = served.case.error
    outcome = await served.execute(name, arguments)
    assert outcome.status == "tool_error", outcome.output
    assert expected in outcome.output
    assert served.reached[-1] == name
    assert "Hint:" in outcome.output
