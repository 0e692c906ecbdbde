"""MCP servers in the registry of a `Harness`: one connection per server, shared by every
agent, its tools named SERVER.TOOL there and called by their own names by the model."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp_test_support import descendants

from harness import Agent, Harness
from harness.core import Message
from harness.errors import ConfigError
from harness.gateway import ModelRequest
from harness.runtime import Settings
from harness.runtime.registry import ToolConfig
from harness.testing import FunctionModel, call, reply
from harness.tools.mcp import MCPServerConfig


def echoes(word: str) -> FunctionModel:
    """A model that calls `echo` with `word`, then answers with what came back."""

    def answer(request: ModelRequest) -> Message:
        last = request.messages[-1]
        if last.role == "user":
            return reply(None, call("echo", {"text": word}))
        return reply(f"heard {last.content}")

    return FunctionModel(answer)


def python_children(before: set[int]) -> set[int]:
    """Processes started since `before` that run the flaky server."""
    found: set[int] = set()
    for pid in descendants() - before:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"flaky_server.py" in command:
            found.add(pid)
    return found


async def test_two_agents_share_one_server_process(
    tmp_path: Path, flaky: Callable[..., MCPServerConfig]
) -> None:
    settings = Settings(
        home=tmp_path,
        mcp_servers={"flaky": flaky()},
        tools={"flaky.echo": ToolConfig(name="flaky.echo", tags=("talk",), max_concurrent=3)},
    )
    before = descendants()
    async with Harness(settings) as harness:
        by_glob = Agent(name="one", model=echoes("ping"), tools=["flaky.e*"])
        by_server = Agent(name="two", model=echoes("pong"), mcp=["flaky"])
        by_tag = Agent(name="three", model=echoes("tock"), tools=["tag:talk"])
        runs = [await harness.submit(a, "go") for a in (by_glob, by_server, by_tag)]
        results = [await harness.wait(run_id, timeout=60) for run_id in runs]
        servers = python_children(before)
        echo = harness.registry.get("flaky.echo")
        odd = harness.registry.get("flaky.odd_name_with_dots")
        slots = harness.registry.slots("flaky.echo")
    assert [r.output for r in results] == ["heard ping", "heard pong", "heard tock"]
    assert len(servers) == 1  # one connection for the three agents
    assert echo is not None
    assert (echo.source, echo.model_name, echo.tags, echo.max_concurrent) == (
        "mcp:flaky",
        "echo",
        ("talk",),
        3,
    )
    assert odd is not None  # a server's odd name, made valid, under the server's name
    assert slots is not None
    assert slots.limit == 3


async def test_a_tool_the_server_lacks_is_a_clear_error_at_the_first_build(
    tmp_path: Path, flaky: Callable[..., MCPServerConfig]
) -> None:
    settings = Settings(home=tmp_path, mcp_servers={"flaky": flaky()})
    async with Harness(settings) as harness:
        agent = Agent(name="a", tools=["flaky.nosuch"])
        harness.registry.check(agent)  # the server is known: its list is read when built
        with pytest.raises(ConfigError) as error:
            await harness.registry.toolset(agent)
        run_id = await harness.submit(agent, "go")  # and a run of it fails, saying why
        result = await harness.wait(run_id, timeout=60)
    assert "no tool 'flaky.nosuch'" in str(error.value)
    assert "flaky.echo" in str(error.value)
    assert result.termination == "error"
    assert "no tool 'flaky.nosuch'" in (result.error or "")


async def test_two_servers_whose_tools_share_a_name_need_a_prefix(
    tmp_path: Path, flaky: Callable[..., MCPServerConfig]
) -> None:
    other = dataclasses.replace(flaky(), name="other")
    prefixed = dataclasses.replace(other, tool_prefix="other_")
    clashing = Settings(home=tmp_path, mcp_servers={"flaky": flaky(), "other": other})
    async with Harness(clashing) as h:
        with pytest.raises(ConfigError) as error:
            await h.registry.toolset(Agent(name="a", tools=["flaky.echo", "other.echo"]))
    assert "'flaky.echo' and 'other.echo' are both called 'echo'" in str(error.value)
    assert "tool_prefix in [mcp.other]" in str(error.value)
    settings = Settings(home=tmp_path, mcp_servers={"flaky": flaky(), "other": prefixed})
    async with Harness(settings) as h:
        toolset = await h.registry.toolset(Agent(name="a", tools=["*.echo"]))
        assert [n for n in toolset.names if "echo" in n] == ["echo", "other_echo"]
        assert h.registry.get("other.echo") is not None  # the registry name has no prefix


async def test_a_server_given_to_an_agent_joins_the_registry(
    tmp_path: Path, flaky: Callable[..., MCPServerConfig]
) -> None:
    async with Harness(Settings(home=tmp_path)) as harness:
        agent = Agent(name="a", model=echoes("hey"), mcp=[flaky()], tools=["flaky.echo"])
        result = await harness.run(agent, "go")
        assert harness.registry.servers["flaky"] == flaky()
    assert result.output == "heard hey"
