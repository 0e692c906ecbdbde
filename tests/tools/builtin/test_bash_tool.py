"""The `bash` tool's host runner (the explicit opt-out of the sandbox), run through a `Toolset`.

The sandboxed path is tested in test_bash_sandboxed.py; here the sandbox is made
unavailable on purpose (a bwrap path that does not exist) and unsandboxed commands are
allowed, so that the process handling of the host runner is tested on its own.
"""

import asyncio
import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.core import Limits, ToolCall
from harness.errors import ToolDefinitionError
from harness.tools import ToolOutcome, Toolset, bash_tool
from harness.tools.builtin import builtin_tool, clean_output
from harness.tools.builtin.bash import WARNING_UNSANDBOXED
from harness.tools.sandbox import Sandbox
from harness.tools.workspaces import WorkspaceRefused

LIMITS = Limits(max_result_chars=100)
"""Deliberately tight: the bash tool must bring its own result size (and its own timeout,
which `Limits.tool_timeout` would only cut shorter)."""


NO_SANDBOX = Sandbox(bwrap="/nonexistent/bwrap")


async def bash(command: str, **options: object) -> ToolOutcome:
    options = {"sandbox": NO_SANDBOX, "allow_unsandboxed": True, **options}
    toolset = Toolset([bash_tool(**options)])  # type: ignore[arg-type]
    call = ToolCall(id="call_1", name="bash", arguments=json.dumps({"command": command}))
    outcome = await toolset.execute(call, limits=LIMITS)
    assert outcome.message.tool_call_id == "call_1"
    return outcome


def content(outcome: ToolOutcome) -> str:
    """The text the model saw, less the warning line every unsandboxed result ends with."""
    assert outcome.message.content is not None
    return outcome.message.content.removesuffix("\n" + WARNING_UNSANDBOXED)


async def test_every_unsandboxed_result_says_so_and_the_audit_facts_say_none() -> None:
    outcome = await bash("echo hi")
    assert outcome.message.content == "hi\n[exit code 0]\n" + WARNING_UNSANDBOXED
    assert outcome.metadata["sandbox"] == "none"
    assert outcome.metadata["exit_code"] == 0


def test_unsandboxed_and_network_calls_need_approval() -> None:
    assert bash_tool().approval == "auto"
    assert bash_tool(allow_unsandboxed=True).approval == "ask"
    assert bash_tool(network=True).approval == "ask"


def test_spec() -> None:
    spec = bash_tool(timeout=30, max_result_chars=1234)
    assert spec.name == "bash"
    assert spec.required == ("command",)
    assert spec.parameters["properties"]["command"]["type"] == "string"
    assert spec.side_effects == "destructive"
    assert spec.timeout == 30
    assert spec.grace_s > 0  # time to kill the command and report it before a cancel
    assert spec.max_result_chars == 1234
    assert "bash command" in spec.description
    assert "killed after 30 s" in spec.description


async def test_output_and_exit_code() -> None:
    outcome = await bash("echo hello; echo oops >&2; exit 3")
    assert outcome.status == "ok"
    assert content(outcome) == "hello\noops\n[exit code 3]"


async def test_no_output() -> None:
    assert content(await bash("true")) == "(no output)\n[exit code 0]"


async def test_each_call_gets_a_fresh_noninteractive_shell() -> None:
    outcome = await bash('cd /; read -r line; echo "read=$? line=$line"')
    assert content(outcome).startswith("read=1 line=\n")


async def test_cwd(tmp_path: Path) -> None:
    outcome = await bash("pwd", cwd=tmp_path)
    assert content(outcome) == f"{tmp_path}\n[exit code 0]"


async def test_a_missing_cwd_is_refused_when_the_tool_is_made(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceRefused, match="does not exist"):
        await bash("pwd", cwd=tmp_path / "absent")


async def test_a_cwd_removed_after_the_tool_was_made_is_a_tool_error(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    toolset = Toolset([bash_tool(cwd=gone, sandbox=NO_SANDBOX, allow_unsandboxed=True)])
    gone.rmdir()
    call = ToolCall(id="call_1", name="bash", arguments=json.dumps({"command": "pwd"}))
    outcome = await toolset.execute(call, limits=LIMITS)
    assert outcome.status == "tool_error"
    assert "could not be started" in content(outcome)
    assert "working directory" in content(outcome)


async def test_default_environment_is_small_and_keeps_secrets_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HARNESS_TEST_SECRET", "hunter2")
    outcome = await bash("echo ${HARNESS_TEST_SECRET:-none} $TERM $PAGER; command -v ls")
    assert content(outcome).startswith("none dumb cat\n/")


async def test_explicit_environment() -> None:
    outcome = await bash("echo $GREETING", env={"GREETING": "hi", "PATH": os.environ["PATH"]})
    assert content(outcome) == "hi\n[exit code 0]"


async def test_empty_command_is_refused_before_running() -> None:
    outcome = await bash("")
    assert outcome.status == "invalid_arguments"
    assert "command (string, required)" in content(outcome)


async def test_timeout_kills_the_whole_process_group(
    pid_file: Path, read_pids: Callable[[], list[int]], gone_soon: Callable[[int], bool]
) -> None:
    command = f"sleep 60 & echo $! > {pid_file}; (sleep 61 & echo $! >> {pid_file}); sleep 62"
    started = time.monotonic()
    outcome = await bash(command, timeout=1)
    assert time.monotonic() - started < 10
    assert outcome.status == "tool_timeout"
    assert content(outcome).startswith("Tool 'bash' was stopped after 1 s")
    assert content(outcome).endswith(
        "[killed after 1 s (timeout): the command did not finish. "
        "Make it faster, give it less work, or run long jobs in "
        "smaller steps.]"
    )
    pids = read_pids()
    assert len(pids) == 2
    assert all(gone_soon(pid) for pid in pids)


async def test_cpu_spin_is_killed_at_the_timeout() -> None:
    started = time.monotonic()
    outcome = await bash("while :; do :; done", timeout=0.5)
    assert time.monotonic() - started < 10
    assert "killed after 0.5 s (timeout)" in content(outcome)


async def test_background_child_holding_stdout_does_not_block(
    pid_file: Path, read_pids: Callable[[], list[int]], gone_soon: Callable[[int], bool]
) -> None:
    started = time.monotonic()
    outcome = await bash(f"sleep 30 & echo $! > {pid_file}; echo hi")
    assert time.monotonic() - started < 10
    assert content(outcome) == "hi\n[exit code 0]"
    assert gone_soon(read_pids()[0])


async def test_nohup_and_double_fork_children_are_killed_too(
    pid_file: Path, read_pids: Callable[[], list[int]], gone_soon: Callable[[int], bool]
) -> None:
    command = (
        f"nohup sleep 30 >/dev/null 2>&1 & echo $! > {pid_file}; "
        f"( (sleep 31 & echo $! >> {pid_file}) & ); echo done"
    )
    started = time.monotonic()
    outcome = await bash(command)
    assert time.monotonic() - started < 10
    assert content(outcome).startswith("done\n")
    await asyncio.sleep(0)
    assert all(gone_soon(pid) for pid in read_pids())


async def test_escaped_session_holding_stdout_does_not_block(
    pid_file: Path, read_pids: Callable[[], list[int]], alive: Callable[[int], bool]
) -> None:
    # setsid leaves the process group, so only the sandbox's pid namespace can kill it;
    # the call must still return promptly.
    started = time.monotonic()
    outcome = await bash(f"setsid sleep 30 & echo $! > {pid_file}; echo hi")
    assert time.monotonic() - started < 10
    assert content(outcome).startswith("hi\n")
    assert alive(read_pids()[0])


async def test_huge_output_is_cut_with_a_note() -> None:
    outcome = await bash("seq 1 300000", max_result_chars=600)
    text = content(outcome)
    assert len(text) <= 600
    assert text.startswith("1\n2\n3\n")
    assert "characters cut ...]" in text
    total = sum(len(str(n)) + 1 for n in range(1, 300_001))
    assert f"[the command wrote {total:,} bytes of output; only its start and end are kept]" in text
    assert "\n299999\n300000\n" in text
    assert text.endswith("[exit code 0]")


async def test_endless_output_hits_the_cap_and_is_killed() -> None:
    started = time.monotonic()
    outcome = await bash("yes", max_result_chars=500)
    assert time.monotonic() - started < 10
    text = content(outcome)
    assert len(text) <= 500
    assert text.startswith("y\ny\n")
    assert "[killed: the command wrote more than 8," in text


async def test_twenty_megabytes_through_head() -> None:
    outcome = await bash("yes | head -c 20000000")
    assert "[killed: the command wrote more than" in content(outcome)


async def test_binary_and_control_characters_are_cleaned() -> None:
    command = (
        r"printf 'ok \xff\xfe bad \xc3\x28 nul[\x00] esc[\x1b[31mred\x1b[0m] "
        r"bell\x07 cr\r\ntab\there café\n'"
    )
    text = content(await bash(command, max_result_chars=1000))
    assert text == (
        "ok \ufffd\ufffd bad \ufffd( nul[] esc[red] bell cr\ntab\there café\n[exit code 0]"
    )


def test_clean_output_strips_escape_sequences_and_c1_controls() -> None:
    raw = b"\x1b]0;title\x07a\x1b[2Kb\x1b(Bc\x9bd\x7fe\r\rf\tg\n"
    assert clean_output(raw) == "abc\ufffdde" + "f\tg\n"
    assert clean_output("x\u0085y".encode()) == "xy"


async def test_terminated_by_a_signal() -> None:
    outcome = await bash("kill -TERM $$")
    assert content(outcome) == f"(no output)\n[terminated by signal {signal.SIGTERM.name}]"


async def test_cancelling_the_call_kills_the_command(
    pid_file: Path, read_pids: Callable[[], list[int]], gone_soon: Callable[[int], bool]
) -> None:
    toolset = Toolset([bash_tool(sandbox=NO_SANDBOX, allow_unsandboxed=True)])
    call = ToolCall(
        id="c",
        name="bash",
        arguments=json.dumps({"command": f"sleep 40 & echo $! > {pid_file}; wait"}),
    )
    task = asyncio.ensure_future(toolset.execute(call, limits=LIMITS))
    for _ in range(500):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gone_soon(read_pids()[0])


def test_builtin_tool_by_name(tmp_path: Path) -> None:
    spec = builtin_tool("bash", workspace=tmp_path)
    assert spec.name == "bash"
    assert f"in {tmp_path}" in spec.description


def test_unknown_builtin_tool() -> None:
    with pytest.raises(ToolDefinitionError, match="built-in tools: bash"):
        builtin_tool("python")
