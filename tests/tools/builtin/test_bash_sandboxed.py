"""The `bash` tool as agents get it: every command in the bubblewrap sandbox."""

import json
import os
from pathlib import Path

import pytest

from harness.core import Limits, ToolCall
from harness.tools import MemoryResultStore, ToolContext, Toolset, bash_tool, read_result_tool
from harness.tools.sandbox import Sandbox

LIMITS = Limits()


def call(command: str, id: str = "c1") -> ToolCall:
    return ToolCall(id=id, name="bash", arguments=json.dumps({"command": command}))


async def test_commands_run_in_the_workspace_inside_the_sandbox(
    sandbox: Sandbox, workspace: Path
) -> None:
    toolset = Toolset([bash_tool(cwd=workspace, sandbox=sandbox)])
    outcome = await toolset.execute(call("pwd; id -u; echo made > out.txt"), limits=LIMITS)
    assert outcome.status == "ok"
    assert outcome.message.content == "/workspace\n1000\n[exit code 0]"
    assert (workspace / "out.txt").read_text() == "made\n"
    assert outcome.metadata["sandbox"] == "bwrap"
    assert outcome.metadata["exit_code"] == 0
    assert outcome.metadata["network"] is False


async def test_no_secret_of_the_harness_reaches_the_command(
    sandbox: Sandbox, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    toolset = Toolset([bash_tool(cwd=workspace, sandbox=sandbox)])
    script = "env; tr '\\0' '\\n' < /proc/1/environ; cat /etc/shadow 2>&1 || true"
    outcome = await toolset.execute(call(script), limits=LIMITS)
    assert "sk-secret-value" not in outcome.output
    assert "OPENAI_API_KEY" not in outcome.output
    assert "root:" not in outcome.output


async def test_writing_outside_the_workspace_fails(sandbox: Sandbox, workspace: Path) -> None:
    toolset = Toolset([bash_tool(cwd=workspace, sandbox=sandbox)])
    outcome = await toolset.execute(call("touch /usr/evil; echo code=$?"), limits=LIMITS)
    assert "Read-only file system" in outcome.output
    assert not Path("/usr/evil").exists()


async def test_the_timeout_kills_the_command_and_says_so(
    sandbox: Sandbox, workspace: Path, leftovers: object
) -> None:
    toolset = Toolset([bash_tool(cwd=workspace, sandbox=sandbox, timeout=1)])
    outcome = await toolset.execute(call("sleep 30 & sleep 30"), limits=LIMITS)
    assert outcome.status == "tool_timeout"
    assert outcome.output.startswith("Tool 'bash' was stopped after 1 s")
    assert "[killed after 1 s (timeout)" in outcome.output
    assert outcome.metadata["timed_out"] is True


async def test_limits_tool_timeout_kills_the_command_before_its_own_timeout(
    sandbox: Sandbox, workspace: Path, leftovers: object
) -> None:
    toolset = Toolset([bash_tool(cwd=workspace, sandbox=sandbox)])  # its own: 120 s
    outcome = await toolset.execute(
        call("echo started; sleep 100 & sleep 100"), limits=Limits(tool_timeout=1)
    )
    assert outcome.status == "tool_timeout"
    assert outcome.output.startswith("Tool 'bash' was stopped after 1 s")
    assert "started\n[killed after 1 s (timeout)" in outcome.output  # with its partial output
    assert outcome.metadata["timed_out"] is True
    assert outcome.metadata["timeout_s"] == 1


async def test_without_a_sandbox_the_tool_refuses_and_says_how_to_fix_it(
    workspace: Path, sandbox: Sandbox
) -> None:
    broken = Sandbox(bwrap="/nonexistent/bwrap")
    toolset = Toolset([bash_tool(cwd=workspace, sandbox=broken)])
    marker = workspace / "ran"
    outcome = await toolset.execute(call(f"touch {marker}"), limits=LIMITS)
    assert outcome.status == "tool_error"
    assert "no sandbox available" in outcome.output
    assert "bubblewrap" in outcome.output
    assert not marker.exists()


async def test_a_directory_under_a_private_parent_is_a_workspace_without_handing_it_over(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # pytest's tmp_path sits under a 0700 directory; as root it is root's, not the sandbox's.
    owner = tmp_path.stat().st_uid
    toolset = Toolset([bash_tool(cwd=tmp_path, sandbox=sandbox)])
    outcome = await toolset.execute(call("echo made > out.txt"), limits=LIMITS)
    assert outcome.status == "ok", outcome.output
    assert (tmp_path / "out.txt").read_text() == "made\n"
    assert (tmp_path / "out.txt").stat().st_uid == owner
    assert tmp_path.stat().st_uid == owner


async def test_long_output_is_cut_and_readable_page_by_page(
    sandbox: Sandbox, workspace: Path
) -> None:
    toolset = Toolset([bash_tool(cwd=workspace, sandbox=sandbox), read_result_tool()])
    context = ToolContext(run_id="run_1", results=MemoryResultStore())
    outcome = await toolset.execute(call("seq 1 5000", id="big"), limits=LIMITS, context=context)
    shown = outcome.message.content or ""
    assert len(shown) <= 4000
    assert outcome.truncated
    assert 'call read_result with call_id="big"' in shown
    page = await toolset.execute(
        ToolCall(
            id="r",
            name="read_result",
            arguments=json.dumps({"call_id": "big", "offset": 20000, "length": 100}),
        ),
        limits=LIMITS,
        context=context,
    )
    assert page.status == "ok"
    full = "\n".join(str(n) for n in range(1, 5001)) + "\n[exit code 0]"
    assert outcome.output == full
    assert full[20000:20100] in (page.message.content or "")
    assert "Next: offset=20100" in (page.message.content or "")


async def test_files_made_by_the_sandbox_belong_to_its_uid(
    sandbox: Sandbox, workspace: Path
) -> None:
    toolset = Toolset([bash_tool(cwd=workspace, sandbox=sandbox)])
    await toolset.execute(call("echo x > owned.txt"), limits=LIMITS)
    assert os.stat(workspace / "owned.txt").st_uid == os.stat(workspace).st_uid
