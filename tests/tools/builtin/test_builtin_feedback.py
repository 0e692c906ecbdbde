"""What the built-in tools tell the model when something fails or comes back empty.

Each error and empty result must say what to try next (seed §5.1): a model told only
"not found" repeats the call.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from harness.core import Limits, ToolCall
from harness.errors import ToolError
from harness.tools import MemoryResultStore, ToolContext, ToolOutcome, Toolset, read_result_tool
from harness.tools.builtin import bash_tool
from harness.tools.builtin.bash import WARNING_UNSANDBOXED, run_bash
from harness.tools.builtin.files import file_tools
from harness.tools.sandbox import Sandbox

NO_SANDBOX = Sandbox(bwrap="/nonexistent/bwrap")


async def bash(command: str) -> str:
    toolset = Toolset([bash_tool(sandbox=NO_SANDBOX, allow_unsandboxed=True)])
    call = ToolCall(id="c1", name="bash", arguments=json.dumps({"command": command}))
    outcome = await toolset.execute(call, limits=Limits())
    assert outcome.message.content is not None
    return outcome.message.content.removesuffix("\n" + WARNING_UNSANDBOXED)


# --- bash -----------------------------------------------------------------------------------


async def test_a_silent_failure_says_so_and_what_to_try() -> None:
    text = await bash("grep -q needle /dev/null")
    assert text.startswith("(no output)\n[exit code 1: it failed without printing anything.")
    assert "grep means no line matched" in text
    assert "set -x;" in text


async def test_a_failure_with_output_lets_the_output_speak() -> None:
    assert await bash("echo 'error: bad input'; exit 1") == "error: bad input\n[exit code 1]"


async def test_command_not_found() -> None:
    text = await bash("definitely-not-a-program-xyz")
    assert "command not found" in text
    assert text.endswith(
        "[exit code 127: a command was not found: check its spelling with `command -v NAME`; "
        "only programs installed on this machine are there, so use another one if it is "
        "missing]"
    )


async def test_not_executable(tmp_path: Path) -> None:
    script = tmp_path / "tool.sh"
    script.write_text("echo hi\n")
    text = await bash(str(script))
    assert "[exit code 126: a program was found but cannot be executed" in text
    assert "bash script.sh" in text


async def test_killed_by_a_signal_says_what_it_usually_means() -> None:
    text = await bash("kill -KILL $$")
    assert text == (
        f"(no output)\n[terminated by signal {signal.SIGKILL.name}: killed from outside, usually "
        "for using too much CPU time or memory; give it less work per call]"
    )


async def test_sandboxed_silent_failure(sandbox: Sandbox, workspace: Path) -> None:
    toolset = Toolset([bash_tool(cwd=workspace, sandbox=sandbox)])
    call = ToolCall(id="c1", name="bash", arguments=json.dumps({"command": "test -f nope"}))
    outcome = await toolset.execute(call, limits=Limits())
    assert outcome.message.content is not None
    assert outcome.message.content.startswith(
        "(no output)\n[exit code 1: it failed without printing anything."
    )


async def test_run_bash_runs_like_the_tool_with_extra_variables(tmp_path: Path) -> None:
    result = await run_bash(
        'echo "$GREETING from $(basename "$PWD")"; command -v ls >/dev/null',
        cwd=tmp_path,
        extra_env={"GREETING": "hello"},
        sandbox=NO_SANDBOX,
        allow_unsandboxed=True,
    )
    assert result.text == f"hello from {tmp_path.name}\n[exit code 0]\n{WARNING_UNSANDBOXED}"
    assert result.metadata["exit_code"] == 0


async def test_run_bash_in_the_sandbox(sandbox: Sandbox, workspace: Path) -> None:
    result = await run_bash(
        'echo "$GREETING in $PWD"', cwd=workspace, extra_env={"GREETING": "hi"}, sandbox=sandbox
    )
    assert result.text == "hi in /workspace\n[exit code 0]"
    assert result.metadata["sandbox"] == "bwrap"


async def test_run_bash_refuses_without_a_sandbox(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="no sandbox available"):
        await run_bash("true", cwd=tmp_path, sandbox=NO_SANDBOX)


# --- files ----------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("def main():\n    pass\n")
    (root / "src" / "utils.py").write_text("def helper():\n    pass\n")
    (root / "README.md").write_text("# Project\n")
    return root


def call(workspace: Path, name: str, **arguments: Any) -> str:
    spec = next(spec for spec in file_tools(workspace) if spec.name == name)
    return spec.function(**arguments)


def refusal(workspace: Path, name: str, **arguments: Any) -> ToolError:
    with pytest.raises(ToolError) as caught:
        call(workspace, name, **arguments)
    return caught.value


def test_missing_file_suggests_similar_names_in_its_directory(project: Path) -> None:
    error = refusal(project, "read_file", path="src/mian.py")
    assert error.message == "'src/mian.py' does not exist in the workspace."
    assert error.hint == (
        "Did you mean 'src/main.py'? Use list_dir on 'src' to see what is there, or search "
        "to find files by content."
    )


def test_missing_directory_suggests_similar_directories(project: Path) -> None:
    error = refusal(project, "read_file", path="scr/main.py")
    assert "(there is no 'scr')" in error.message
    assert error.hint is not None
    assert error.hint.startswith("Did you mean 'src'?")


def test_missing_file_with_nothing_close_says_where_to_look(project: Path) -> None:
    error = refusal(project, "read_file", path="src/zzzz.txt")
    assert error.hint == (
        "Use list_dir on 'src' to see what is there, or search to find files by content."
    )


def test_search_glob_that_matches_nothing_lists_what_is_there(project: Path) -> None:
    text = call(project, "search", pattern="def", glob="*.pyy")
    assert "No text file matched the glob '*.pyy'" in text
    assert "Files there: *.py (2), *.md (1)." in text
    assert text.endswith("Did you mean '*.py'?")


def test_search_where_there_are_no_files(project: Path) -> None:
    (project / "empty").mkdir()
    text = call(project, "search", pattern="def", path="empty")
    assert text == (
        "No matches for 'def' in 'empty' (0 text files searched). There is no text file "
        "there to search; list_dir shows what the path holds."
    )


def test_search_where_there_are_only_binary_files(project: Path) -> None:
    (project / "bin").mkdir()
    (project / "bin" / "blob").write_bytes(b"\x00def\x00")
    text = call(project, "search", pattern="def", path="bin")
    assert "0 text files searched; 1 binary, unreadable or over 8 MiB skipped" in text
    assert "The search reads text files only" in text


def test_search_without_a_match_suggests_a_broader_pattern(project: Path) -> None:
    text = call(project, "search", pattern="class Main")
    assert "Try a shorter or looser pattern, (?i) to ignore case" in text


def test_opening_a_fifo_says_it_is_not_a_file(project: Path) -> None:
    os.mkfifo(project / "pipe")
    error = refusal(project, "read_file", path="pipe")
    assert "not a regular file" in error.message
    assert error.hint is not None
    assert "list_dir" in error.hint


# --- read_result ------------------------------------------------------------------------------


async def read_result(**arguments: Any) -> ToolOutcome:
    store = MemoryResultStore()
    store.save("run_1", "call_big", "x" * 50)
    call = ToolCall(id="r", name="read_result", arguments=json.dumps(arguments))
    context = ToolContext(run_id="run_1", results=store)
    return await Toolset([read_result_tool()]).execute(call, limits=Limits(), context=context)


async def test_read_result_of_an_unknown_call_says_which_ids_work() -> None:
    outcome = await read_result(call_id="call_nope")
    assert outcome.status == "tool_error"
    text = outcome.message.content or ""
    assert "No stored result for call_id 'call_nope' in this run." in text
    assert 'read_result(call_id="call_abc123")' in text
    assert "shown whole are not stored" in text


async def test_read_result_past_the_end_gives_the_valid_range() -> None:
    outcome = await read_result(call_id="call_big", offset=80)
    assert outcome.status == "tool_error"
    text = outcome.message.content or ""
    assert "offset 80 is past the end: the result has 50 characters." in text
    assert "Use an offset from 0 to 49; offset=0 reads from the start." in text
