"""MCP tools inside a whole run: a server that dies mid-run does not end the run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness import Agent, Harness
from harness.runtime import Settings
from harness.testing import ScriptedModel, call, reply
from harness.tools.mcp import MCPServerConfig, MCPToolSource


async def test_a_crash_mid_run_is_a_tool_message_and_the_run_finishes(
    tmp_path: Path, flaky: Callable[..., MCPServerConfig]
) -> None:
    model = ScriptedModel(
        [
            reply(None, call("echo", {"text": "ping"}, id="c1")),
            reply(None, call("crash", {}, id="c2")),
            reply(None, call("echo", {"text": "again"}, id="c3")),
            reply("The server is gone; I answered without it."),
        ]
    )
    async with MCPToolSource(flaky()) as source, Harness(Settings(home=tmp_path)) as harness:
        result = await harness.run(Agent(model=model, tools=list(source.tools)), "go")
    assert result.termination == "final_answer"
    assert result.output == "The server is gone; I answered without it."
    answers = {m.tool_call_id: m.content for m in result.messages if m.role == "tool"}
    assert answers["c1"] == "ping"
    assert "MCP server 'flaky' is unavailable" in (answers["c2"] or "")
    assert "MCP server 'flaky' is unavailable" in (answers["c3"] or "")
