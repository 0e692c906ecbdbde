"""Servers that crash, hang, vanish or never start: the call always returns a tool message.

Most tests use `servers/flaky_server.py`, a real MCP server (the SDK's `MCPServer`) whose
tools exit the process, sleep forever or fail on purpose.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp_test_support import descendants, free_port, start_everything_http, stop, wait_for_exit

from harness.core import Limits, ToolCall
from harness.errors import ConfigError, ToolError
from harness.tools import Toolset
from harness.tools.mcp import MCPServerConfig, MCPToolSource

LIMITS = Limits(tool_timeout=20.0)

Flaky = Callable[..., MCPServerConfig]


async def execute(toolset: Toolset, name: str, arguments: dict[str, Any] | None = None) -> Any:
    call = ToolCall(id=f"call_{name}", name=name, arguments=json.dumps(arguments or {}))
    return await toolset.execute(call, limits=LIMITS)


async def test_a_server_that_crashes_mid_call_gives_a_tool_message(flaky: Flaky) -> None:
    before = descendants()
    async with MCPToolSource(flaky()) as source:
        toolset = Toolset(source.tools)
        started = time.monotonic()
        outcome = await execute(toolset, "crash", {"after_s": 0.2})
        assert time.monotonic() - started < 3.0
        assert outcome.status == "tool_error"
        assert "MCP server 'flaky' is unavailable" in outcome.output
        assert "Do not call them again" in outcome.output
        assert wait_for_exit(before, timeout_s=3.0) == set(), "the crashed server is still alive"

        again = await execute(toolset, "echo", {"text": "still there?"})
        assert again.status == "tool_error"
        assert "unavailable" in again.output
        assert again.duration_s < 0.5


async def test_a_tool_that_never_answers_times_out_and_the_server_stays_usable(
    flaky: Flaky,
) -> None:
    async with MCPToolSource(flaky(timeout_s=1.0)) as source:
        toolset = Toolset(source.tools)
        started = time.monotonic()
        outcome = await execute(toolset, "hang")
        assert outcome.status == "tool_timeout"
        assert 0.9 < time.monotonic() - started < 3.0
        after = await execute(toolset, "echo", {"text": "after the hang"})
        assert (after.status, after.output) == ("ok", "after the hang")


async def test_the_sdk_deadline_bounds_a_call_made_outside_a_toolset(flaky: Flaky) -> None:
    async with MCPToolSource(flaky(timeout_s=0.5)) as source:
        hang = next(spec for spec in source.tools if spec.name == "hang")
        started = time.monotonic()
        with pytest.raises(ToolError, match=r"did not answer the call to 'hang' within 0.5 s"):
            await hang.function()
        assert time.monotonic() - started < 3.0


async def test_results_and_errors_become_text_for_the_model(flaky: Flaky) -> None:
    async with MCPToolSource(flaky()) as source:
        toolset = Toolset(source.tools)
        mixed = await execute(toolset, "mixed")
        assert mixed.output == (
            "first\n"
            "[image: image/png, 32 bytes]\n"
            "[audio: audio/wav, 4 bytes]\n"
            "[resource: file:///notes.txt]\nnote text\n"
            "[resource: file:///data.bin, binary, 5 bytes]\n"
            "[resource link: report <file:///report.pdf>, application/pdf]"
        )
        structured = await execute(toolset, "structured_only")
        assert json.loads(structured.output) == {"answer": 42, "unit": "m"}
        refused = await execute(toolset, "refuse", {"reason": "not today"})
        assert refused.status == "tool_error"
        assert "refused: not today" in refused.output
        rejected = await execute(toolset, "reject")
        assert rejected.status == "tool_error"
        assert "MCP server 'flaky' refused the call to 'reject': no such record" in rejected.output
        calls = [execute(toolset, "echo", {"text": str(n)}) for n in range(5)]
        assert [o.output for o in await asyncio.gather(*calls)] == [str(n) for n in range(5)]


async def test_names_are_made_valid_and_mapped_back(flaky: Flaky) -> None:
    async with MCPToolSource(flaky(tool_prefix="flaky.")) as source:
        names = {spec.name for spec in source.tools}
        assert "flaky_echo" in names
        assert source.remote_names["flaky_odd_name_with_dots"] == "odd name/with.dots"
        outcome = await execute(Toolset(source.tools), "flaky_odd_name_with_dots")
        assert (outcome.status, outcome.output) == ("ok", "odd")
        echo = next(spec for spec in source.tools if spec.name == "flaky_echo")
        assert (echo.side_effects, echo.timeout, echo.approval) == ("none", 5.0, "auto")
        crash = next(spec for spec in source.tools if spec.name == "flaky_crash")
        assert crash.side_effects == "mutating"


async def test_server_defaults_apply_to_tools_without_annotations(flaky: Flaky) -> None:
    async with MCPToolSource(flaky(side_effects="destructive", approval="ask")) as source:
        specs = {spec.name: spec for spec in source.tools}
        assert (specs["hang"].side_effects, specs["hang"].approval) == ("destructive", "ask")
        assert specs["echo"].side_effects == "none"


async def test_closing_stops_the_server_and_later_calls_fail_cleanly(flaky: Flaky) -> None:
    before = descendants()
    source = MCPToolSource(flaky())
    async with source:
        echo = next(spec for spec in source.tools if spec.name == "echo")
        assert descendants() - before
    assert source.tools == ()
    assert wait_for_exit(before, timeout_s=0.5) == set()
    with pytest.raises(ToolError, match="unavailable"):
        await echo.function(text="too late")


async def test_a_source_is_entered_once_at_a_time(flaky: Flaky) -> None:
    source = MCPToolSource(flaky())
    async with source:
        with pytest.raises(ConfigError, match="already open"):
            await source.__aenter__()


@pytest.mark.parametrize(
    ("command", "args", "expected"),
    [
        ("/nonexistent/mcp-server", (), "FileNotFoundError"),
        (sys.executable, ("-c", "pass"), "could not be started"),
        (sys.executable, ("-c", "import time; time.sleep(30)"), "timed out"),
    ],
    ids=["missing-command", "exits-at-once", "never-answers"],
)
async def test_a_server_that_does_not_start_is_a_config_error(
    command: str, args: tuple[str, ...], expected: str
) -> None:
    config = MCPServerConfig(name="broken", command=command, args=args, startup_timeout_s=1.0)
    started = time.monotonic()
    with pytest.raises(ConfigError, match=r"MCP server 'broken' could not be started") as caught:
        async with MCPToolSource(config):
            pass
    assert expected in str(caught.value)
    assert time.monotonic() - started < 8.0


async def test_an_http_server_that_goes_away_fails_the_call_not_the_caller(
    npm_servers: Path, node: str, caplog: pytest.LogCaptureFixture
) -> None:
    process, url = start_everything_http(node, npm_servers)
    try:
        async with MCPToolSource(MCPServerConfig(name="web", url=url, timeout_s=5.0)) as source:
            toolset = Toolset(source.tools)
            assert (await execute(toolset, "echo", {"message": "hi"})).status == "ok"
            stop(process)
            with caplog.at_level(logging.WARNING, logger="harness.tools.mcp"):
                outcome = await execute(toolset, "echo", {"message": "anyone?"})
                assert outcome.status == "tool_error"
                assert "MCP server 'web' is unavailable" in outcome.output
                assert (await execute(toolset, "echo", {"message": "x"})).status == "tool_error"
    finally:
        if process.poll() is None:
            stop(process)


async def test_an_unreachable_http_server_is_a_config_error() -> None:

    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(ConfigError, match=r"could not be started \(http://127\.0\.0\.1"):
        async with MCPToolSource(MCPServerConfig(name="nobody", url=url, startup_timeout_s=2.0)):
            pass


async def test_giving_up_on_a_start_leaves_no_server_behind(flaky: Flaky) -> None:
    before = descendants()
    source = MCPToolSource(flaky())
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(source.__aenter__(), timeout=0.3)
    assert wait_for_exit(before) == set()
    async with source:  # the source can be opened again
        assert source.tools


async def test_a_cancelled_call_leaves_the_server_usable(flaky: Flaky) -> None:
    async with MCPToolSource(flaky()) as source:
        toolset = Toolset(source.tools)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(execute(toolset, "hang"), timeout=0.3)
        outcome = await execute(toolset, "echo", {"text": "still here"})
        assert (outcome.status, outcome.output) == ("ok", "still here")
