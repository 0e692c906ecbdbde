"""The file tools on real files: what each does, and what the model reads back."""

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness.core import Limits, ToolCall
from harness.errors import ToolError
from harness.tools import ToolOutcome, Toolset
from harness.tools.builtin import BUILTIN_TOOLS, builtin_tool
from harness.tools.builtin.files import (
    edit_file_tool,
    file_tools,
    list_dir_tool,
    read_file_tool,
    search_tool,
    write_file_tool,
)
from harness.tools.workspaces import WorkspaceRefused

NAMES = ["read_file", "write_file", "edit_file", "list_dir", "search"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


async def run(workspace: Path, name: str, **arguments: Any) -> ToolOutcome:
    """Execute one call through a `Toolset`, as the agent loop does."""
    call = ToolCall(id="call_1", name=name, arguments=json.dumps(arguments))
    return await Toolset(file_tools(workspace)).execute(call, limits=Limits())


def text(outcome: ToolOutcome) -> str:
    assert outcome.message.content is not None
    return outcome.message.content


def call(workspace: Path, name: str, **arguments: Any) -> str:
    """Call the tool's function directly (it is synchronous)."""
    spec = next(spec for spec in file_tools(workspace) if spec.name == name)
    return spec.function(**arguments)


def refusal(workspace: Path, name: str, **arguments: Any) -> ToolError:
    with pytest.raises(ToolError) as caught:
        call(workspace, name, **arguments)
    return caught.value


# --- the specs -------------------------------------------------------------------------


def test_file_tools_names_and_side_effects(ws: Path) -> None:
    specs = file_tools(ws)
    assert [spec.name for spec in specs] == NAMES
    effects = {spec.name: spec.side_effects for spec in specs}
    assert effects == {
        "read_file": "none",
        "write_file": "mutating",
        "edit_file": "mutating",
        "list_dir": "none",
        "search": "none",
    }
    assert len(Toolset(specs).definitions()) == 5  # every schema is valid JSON Schema


def test_required_parameters(ws: Path) -> None:
    required = {spec.name: spec.required for spec in file_tools(ws)}
    assert required == {
        "read_file": ("path",),
        "write_file": ("path", "content"),
        "edit_file": ("path", "old_text", "new_text"),
        "list_dir": (),
        "search": ("pattern",),
    }


def test_registered_as_builtin_tools(ws: Path) -> None:
    for name in NAMES:
        assert name in BUILTIN_TOOLS
        assert builtin_tool(name, workspace=ws).name == name
    (ws / "a.txt").write_text("x\n")
    assert "a.txt" in builtin_tool("list_dir", workspace=ws).function()


def test_none_workspace_is_the_current_directory(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (ws / "here.txt").write_text("here\n")
    monkeypatch.chdir(ws)
    assert "here" in read_file_tool().function(path="here.txt")


def test_descriptions_tell_the_model_about_paths(ws: Path) -> None:
    for spec in file_tools(ws):
        assert "relative to the workspace root" in spec.description
        assert "symbolic links" in spec.description


# --- read_file -------------------------------------------------------------------------


async def test_read_whole_file_with_line_numbers(ws: Path) -> None:
    (ws / "a.txt").write_text("alpha\n  beta\ngamma\n")
    outcome = await run(ws, "read_file", path="a.txt")
    assert outcome.status == "ok"
    assert text(outcome) == (
        "   1│ alpha\n   2│   beta\n   3│ gamma\n['a.txt': lines 1-3 of 3, the whole file.]"
    )


def test_read_line_range_says_how_to_read_on(ws: Path) -> None:
    (ws / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    result = call(ws, "read_file", path="a.txt", start_line=10, end_line=12)
    assert result.splitlines()[:3] == ["  10│ line 10", "  11│ line 11", "  12│ line 12"]
    assert "lines 10-12 of 100" in result
    assert "start_line=13" in result


def test_read_to_the_end_from_a_start_line(ws: Path) -> None:
    (ws / "a.txt").write_text("a\nb\nc\n")
    result = call(ws, "read_file", path="a.txt", start_line=2)
    assert result == "   2│ b\n   3│ c\n['a.txt': lines 2-3 of 3, to the end of the file.]"


def test_read_end_line_past_the_end_is_clamped(ws: Path) -> None:
    (ws / "a.txt").write_text("a\nb")
    assert "lines 1-2 of 2, the whole file" in call(ws, "read_file", path="a.txt", end_line=99)


def test_read_pages_long_files_within_max_chars(ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"{n:05d} " + "x" * 90 + "\n" for n in range(1000)))
    result = read_file_tool(ws, max_chars=2000).function(path="big.txt")
    assert len(result) < 2500
    shown = result.count("│")
    assert 10 < shown < 25
    assert f"start_line={shown + 1}" in result
    assert "of 1000" in result


def test_read_line_numbers_widen(ws: Path) -> None:
    (ws / "a.txt").write_text("x\n" * 12345)
    result = call(ws, "read_file", path="a.txt", start_line=12345)
    assert result.startswith("12345│ x\n")


def test_read_clips_very_long_lines(ws: Path) -> None:
    (ws / "a.txt").write_text("y" * 5000 + "\n")
    result = call(ws, "read_file", path="a.txt")
    assert "3,000 more characters on this line" in result
    assert result.count("y") == 2000


def test_read_empty_file(ws: Path) -> None:
    (ws / "empty.txt").write_bytes(b"")
    assert call(ws, "read_file", path="empty.txt") == "['empty.txt' is empty: 0 lines]"


def test_read_crlf_and_bad_utf8(ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"one\r\ntw\xffo\r\n")
    result = call(ws, "read_file", path="a.txt")
    assert "   1│ one\n   2│ tw\ufffdo\n" in result


async def test_read_start_past_the_end(ws: Path) -> None:
    (ws / "a.txt").write_text("a\nb\n")
    outcome = await run(ws, "read_file", path="a.txt", start_line=5)
    assert outcome.status == "tool_error"
    assert "which has 2 lines" in text(outcome)
    assert "start_line at most 2" in text(outcome)


def test_read_end_before_start(ws: Path) -> None:
    (ws / "a.txt").write_text("a\nb\nc\n")
    error = refusal(ws, "read_file", path="a.txt", start_line=3, end_line=2)
    assert "Lines 3 to 2" in error.message


async def test_read_start_line_zero_is_a_schema_violation(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    outcome = await run(ws, "read_file", path="a.txt", start_line=0)
    assert outcome.status == "invalid_arguments"


async def test_read_end_line_null_means_to_the_end(ws: Path) -> None:
    (ws / "a.txt").write_text("a\nb\n")
    outcome = await run(ws, "read_file", path="a.txt", end_line=None)
    assert outcome.status == "ok"
    assert "the whole file" in text(outcome)


async def test_read_binary_file_is_refused(ws: Path) -> None:
    (ws / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02" * 10)
    outcome = await run(ws, "read_file", path="blob.bin")
    assert outcome.status == "tool_error"
    assert "'blob.bin' is a binary file (70 bytes)" in text(outcome)
    assert "Hint:" in text(outcome)


async def test_read_missing_file_suggests_close_names(ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "main.py").write_text("")
    outcome = await run(ws, "read_file", path="src/mian.py")
    assert outcome.status == "tool_error"
    assert "'src/mian.py' does not exist in the workspace" in text(outcome)
    assert "Did you mean 'src/main.py'?" in text(outcome)
    assert "list_dir on 'src'" in text(outcome)


def test_read_missing_directory_names_the_gap(ws: Path) -> None:
    error = refusal(ws, "read_file", path="nope/a.txt")
    assert "(there is no 'nope')" in error.message


def test_read_through_a_file_as_directory(ws: Path) -> None:
    (ws / "a.txt").write_text("a")
    error = refusal(ws, "read_file", path="a.txt/b")
    assert "'a.txt' is a file, not a directory" in error.message


def test_read_directory_is_refused(ws: Path) -> None:
    (ws / "d").mkdir()
    error = refusal(ws, "read_file", path="d")
    assert "is a directory" in error.message
    assert error.hint is not None
    assert "list_dir" in error.hint


def test_read_workspace_root_is_refused(ws: Path) -> None:
    assert "workspace root itself" in refusal(ws, "read_file", path=".").message


def test_read_too_large_file_is_refused(ws: Path) -> None:
    with (ws / "huge.log").open("wb") as handle:
        handle.truncate(9 << 20)
    error = refusal(ws, "read_file", path="huge.log")
    assert "9,437,184 bytes" in error.message
    assert error.hint is not None
    assert "search" in error.hint


def test_a_missing_workspace_is_refused_when_the_tool_is_made(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceRefused, match="does not exist"):
        read_file_tool(tmp_path / "gone")


def test_a_workspace_removed_later_is_a_tool_error(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    tool = read_file_tool(gone)
    gone.rmdir()
    assert tool.function is not None
    with pytest.raises(ToolError, match="cannot be opened"):
        tool.function(path="a.txt")


def test_normalised_paths(ws: Path) -> None:
    (ws / "a").mkdir()
    (ws / "a" / "b.txt").write_text("b\n")
    assert "b" in call(ws, "read_file", path="./a//b.txt")


# --- write_file ------------------------------------------------------------------------


async def test_write_creates_file_and_parents(ws: Path) -> None:
    outcome = await run(ws, "write_file", path="pkg/sub/mod.py", content="x = 1\ny = 2\n")
    assert outcome.status == "ok"
    assert text(outcome) == (
        "Wrote 'pkg/sub/mod.py' (a new file): 12 bytes, 2 lines. "
        "Created the directories pkg, pkg/sub."
    )
    assert (ws / "pkg" / "sub" / "mod.py").read_text() == "x = 1\ny = 2\n"


def test_write_overwrites(ws: Path) -> None:
    (ws / "a.txt").write_text("a much longer old content\n")
    result = call(ws, "write_file", path="a.txt", content="new\n")
    assert result == "Wrote 'a.txt' (replacing 26 bytes): 4 bytes, 1 line."
    assert (ws / "a.txt").read_text() == "new\n"


def test_write_keeps_the_mode_of_an_existing_file(ws: Path) -> None:
    script = ws / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    call(ws, "write_file", path="run.sh", content="#!/bin/sh\necho hi\n")
    assert script.stat().st_mode & 0o777 == 0o755


def test_write_empty_and_unicode(ws: Path) -> None:
    assert "0 bytes, 0 lines" in call(ws, "write_file", path="e.txt", content="")
    call(ws, "write_file", path="u.txt", content="café ✓\n")
    assert (ws / "u.txt").read_text(encoding="utf-8") == "café ✓\n"


async def test_write_lone_surrogate_does_not_crash(ws: Path) -> None:
    call_ = ToolCall(
        id="c", name="write_file", arguments='{"path": "s.txt", "content": "a\\ud800b"}'
    )
    outcome = await Toolset(file_tools(ws)).execute(call_, limits=Limits())
    assert outcome.status == "ok"
    assert (ws / "s.txt").read_text(encoding="utf-8") == "a\ufffdb"  # as the toolset decoded it


def test_write_to_a_directory_is_refused(ws: Path) -> None:
    (ws / "d").mkdir()
    assert "is a directory" in refusal(ws, "write_file", path="d", content="x").message


def test_write_below_a_file_is_refused(ws: Path) -> None:
    (ws / "a.txt").write_text("a")
    error = refusal(ws, "write_file", path="a.txt/b.txt", content="x")
    assert "'a.txt' is a file, not a directory" in error.message


# --- edit_file -------------------------------------------------------------------------


async def test_edit_unique_text(ws: Path) -> None:
    (ws / "m.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    outcome = await run(ws, "edit_file", path="m.py", old_text="return 2", new_text="return 3")
    assert outcome.status == "ok"
    assert (ws / "m.py").read_text().endswith("def g():\n    return 3\n")
    assert text(outcome).startswith("Edited 'm.py' at line 6; it has 6 lines now.")
    assert "   6│     return 3" in text(outcome)


def test_edit_multiline_and_delete(ws: Path) -> None:
    (ws / "a.txt").write_text("keep\ndrop 1\ndrop 2\nkeep\n")
    call(ws, "edit_file", path="a.txt", old_text="drop 1\ndrop 2\n", new_text="")
    assert (ws / "a.txt").read_text() == "keep\nkeep\n"


def test_edit_replacement_is_literal(ws: Path) -> None:
    (ws / "a.txt").write_text("x = 1\n")
    call(ws, "edit_file", path="a.txt", old_text="1", new_text=r"\g<0> \1 $&")
    assert (ws / "a.txt").read_text() == "x = \\g<0> \\1 $&\n"


def test_edit_keeps_undecodable_bytes(ws: Path) -> None:
    (ws / "latin.txt").write_bytes(b"caf\xe9 = 1\nother\n")
    call(ws, "edit_file", path="latin.txt", old_text="other", new_text="changed")
    assert (ws / "latin.txt").read_bytes() == b"caf\xe9 = 1\nchanged\n"


async def test_edit_absent_text_points_at_the_closest_line(ws: Path) -> None:
    (ws / "m.py").write_text("def handler(request):\n    return respond(request)\n")
    outcome = await run(
        ws, "edit_file", path="m.py", old_text="return respnd(request)", new_text="pass"
    )
    assert outcome.status == "tool_error"
    message = text(outcome)
    assert "old_text was not found in 'm.py'." in message
    assert "line 2: 'return respond(request)'" in message
    assert "Hint: Read the file with read_file" in message
    assert (ws / "m.py").read_text().endswith("respond(request)\n")


def test_edit_absent_text_with_other_indentation(ws: Path) -> None:
    (ws / "m.py").write_text("class A:\n    def f(self):\n        return 1\n")
    error = refusal(
        ws, "edit_file", path="m.py", old_text="def f(self):\n    return 1", new_text="x"
    )
    assert "It is at line 2 with other whitespace or indentation." in error.message


def test_edit_with_line_number_prefixes_gets_a_hint(ws: Path) -> None:
    (ws / "a.txt").write_text("alpha\nbeta\n")
    error = refusal(ws, "edit_file", path="a.txt", old_text="   1│ alpha\n   2│ beta", new_text="x")
    assert error.hint is not None
    assert "line-number prefixes" in error.hint


def test_edit_crlf_file_gets_a_hint(ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"one\r\ntwo\r\n")
    error = refusal(ws, "edit_file", path="a.txt", old_text="one\ntwo", new_text="x")
    assert error.hint is not None
    assert "Windows line ends" in error.hint
    call(ws, "edit_file", path="a.txt", old_text="one\r\ntwo", new_text="1\r\n2")
    assert (ws / "a.txt").read_bytes() == b"1\r\n2\r\n"


async def test_edit_text_that_is_not_unique(ws: Path) -> None:
    (ws / "a.py").write_text("x = 0\nx = 0\ny = 1\nx = 0\n")
    outcome = await run(ws, "edit_file", path="a.py", old_text="x = 0", new_text="x = 9")
    assert outcome.status == "tool_error"
    assert "old_text occurs 3 times in 'a.py' (at lines 1, 2, 4)" in text(outcome)
    assert "Include more of the surrounding lines" in text(outcome)
    assert (ws / "a.py").read_text() == "x = 0\nx = 0\ny = 1\nx = 0\n"


def test_edit_overlapping_occurrences_count(ws: Path) -> None:
    (ws / "a.txt").write_text("aaa\n")
    error = refusal(ws, "edit_file", path="a.txt", old_text="aa", new_text="b")
    assert "occurs 2 times" in error.message


def test_edit_many_occurrences_are_listed_briefly(ws: Path) -> None:
    (ws / "a.txt").write_text("z\n" * 30)
    error = refusal(ws, "edit_file", path="a.txt", old_text="z", new_text="q")
    assert "occurs 30 times" in error.message
    assert ", ...)" in error.message


def test_edit_empty_or_unchanged_text(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    assert (
        "old_text is empty"
        in refusal(ws, "edit_file", path="a.txt", old_text="", new_text="b").message
    )
    error = refusal(ws, "edit_file", path="a.txt", old_text="a", new_text="a")
    assert "would change nothing" in error.message


def test_edit_binary_file_is_refused(ws: Path) -> None:
    (ws / "b.bin").write_bytes(b"ab\x00cd")
    assert "binary" in refusal(ws, "edit_file", path="b.bin", old_text="ab", new_text="x").message
    assert (ws / "b.bin").read_bytes() == b"ab\x00cd"


def test_edit_missing_file(ws: Path) -> None:
    error = refusal(ws, "edit_file", path="none.py", old_text="a", new_text="b")
    assert "does not exist" in error.message


# --- list_dir --------------------------------------------------------------------------


async def test_list_root_sorted_with_markers(ws: Path) -> None:
    (ws / "b.txt").write_text("hello")
    (ws / "a_dir").mkdir()
    (ws / "a_dir" / "inner.txt").write_text("x")
    (ws / "c").symlink_to("b.txt")
    os.mkfifo(ws / "d.fifo")
    outcome = await run(ws, "list_dir")
    assert outcome.status == "ok"
    assert text(outcome) == (
        "Entries of '.' (depth 1):\n"
        "a_dir/\n"
        "b.txt  (5 bytes)\n"
        "c -> b.txt  (symbolic link, not followed)\n"
        "d.fifo  (special file)"
    )


def test_list_deeper_and_git_is_not_entered(ws: Path) -> None:
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "src" / "pkg" / "m.py").write_text("")
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("ref")
    result = call(ws, "list_dir", depth=3)
    assert result.splitlines()[1:] == [
        ".git/  (not entered)",
        "src/",
        "src/pkg/",
        "src/pkg/m.py  (0 bytes)",
    ]


def test_list_subdirectory_paths_are_from_the_root(ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "m.py").write_text("1")
    assert call(ws, "list_dir", path="src/") == "Entries of 'src' (depth 1):\nsrc/m.py  (1 byte)"


def test_list_empty_directory(ws: Path) -> None:
    assert "is empty" in call(ws, "list_dir")
    assert "write_file" in call(ws, "list_dir")


def test_list_caps_entries(ws: Path) -> None:
    for n in range(12):
        (ws / f"f{n:02d}").write_text("")
    result = list_dir_tool(ws, max_entries=5).function()
    assert result.splitlines()[1:6] == [f"f{n:02d}  (0 bytes)" for n in range(5)]
    assert "[only 5 entries shown: list a subdirectory, or less deep]" in result


def test_list_a_file_shows_the_file(ws: Path) -> None:
    (ws / "a.txt").write_text("abc")
    assert call(ws, "list_dir", path="a.txt").splitlines()[1:] == ["a.txt  (3 bytes)"]


def test_list_missing_directory(ws: Path) -> None:
    assert "does not exist" in refusal(ws, "list_dir", path="nope").message


async def test_list_depth_out_of_range(ws: Path) -> None:
    outcome = await run(ws, "list_dir", depth=0)
    assert outcome.status == "invalid_arguments"


# --- search ----------------------------------------------------------------------------


@pytest.fixture
def project(ws: Path) -> Path:
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("import os\n\ndef main():\n    return os.getcwd()\n")
    (ws / "src" / "util.py").write_text("def helper():\n    pass\n")
    (ws / "README.md").write_text("# App\ndef in docs\n")
    return ws


async def test_search_reports_path_line_text(project: Path) -> None:
    outcome = await run(project, "search", pattern=r"def \w+\(")
    assert outcome.status == "ok"
    assert text(outcome) == (
        "2 matches for 'def \\\\w+\\\\(' in '.' (3 text files searched):\n"
        "src/app.py:3: def main():\n"
        "src/util.py:1: def helper():"
    )


def test_search_glob_by_name_and_by_path(project: Path) -> None:
    by_name = call(project, "search", pattern="def", glob="*.md")
    assert by_name.splitlines()[1:] == ["README.md:2: def in docs"]
    by_path = call(project, "search", pattern="def", glob="src/u*.py")
    assert by_path.splitlines()[1:] == ["src/util.py:1: def helper():"]


def test_search_in_a_subdirectory_or_one_file(project: Path) -> None:
    assert "README" not in call(project, "search", pattern="def", path="src")
    single = call(project, "search", pattern="os", path="src/app.py")
    assert single.splitlines()[1:] == [
        "src/app.py:1: import os",
        "src/app.py:4: return os.getcwd()",
    ]


def test_search_case_insensitive_flag(project: Path) -> None:
    assert "README.md:1: # App" in call(project, "search", pattern="(?i)^# app")


def test_search_skips_binary_and_git(project: Path) -> None:
    (project / "blob.bin").write_bytes(b"def \x00 binary")
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("def in git\n")
    result = call(project, "search", pattern="def")
    assert "blob.bin" not in result
    assert ".git" not in result
    assert "1 binary, unreadable or over 8 MiB skipped" in result


def test_search_caps_matches(ws: Path) -> None:
    (ws / "many.txt").write_text("hit\n" * 50)
    result = search_tool(ws, max_matches=10).function(pattern="hit")
    assert result.count("many.txt:") == 10
    assert "[stopped at 10 matches: narrow the pattern, path or glob]" in result


async def test_search_invalid_regex(ws: Path) -> None:
    outcome = await run(ws, "search", pattern="print(")
    assert outcome.status == "tool_error"
    message = text(outcome)
    assert "'print(' is not a valid regular expression: missing ): print(." in message
    assert "Hint: Put a backslash before" in message


@pytest.mark.parametrize("pattern", [r"(\w)\1", "foo(?=bar)", "(?<!x)y", "(?P<q>a)(?P=q)"])
async def test_search_says_which_features_it_lacks(ws: Path, pattern: str) -> None:
    outcome = await run(ws, "search", pattern=pattern)
    assert outcome.status == "tool_error"
    assert "no backreferences (\\1) or lookaround" in text(outcome)


async def test_a_catastrophic_pattern_finishes_and_the_loop_keeps_running(ws: Path) -> None:
    # A backtracking engine needs about 2**28 steps for this line while holding the GIL, so
    # neither the loop nor the tool timeout could act until it ended.
    (ws / "a.txt").write_text("a" * 28 + "b\n" + "a" * 100_000 + "\n")
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticking = asyncio.create_task(ticker())
    call_ = ToolCall(id="c", name="search", arguments=json.dumps({"pattern": "(a+)+$"}))
    outcome = await Toolset(file_tools(ws)).execute(call_, limits=Limits(tool_timeout=5))
    ticking.cancel()
    assert outcome.status == "ok"
    assert text(outcome).startswith("1 match for '(a+)+$'")
    assert ticks > 0


async def test_search_without_matches_says_what_to_try(project: Path) -> None:
    outcome = await run(project, "search", pattern="nothing_like_this", path="src")
    assert outcome.status == "ok"
    assert text(outcome).startswith(
        "No matches for 'nothing_like_this' in 'src' (2 text files searched). Try a shorter"
    )
    assert "(?i)" in text(outcome)


def test_search_glob_that_matches_no_file(project: Path) -> None:
    result = call(project, "search", pattern="def", glob="*.rs")
    assert "No text file matched the glob '*.rs'" in result
    assert "(files matching '*.rs')" in result


def test_search_missing_path(ws: Path) -> None:
    assert "does not exist" in refusal(ws, "search", pattern="x", path="nope").message


def test_search_long_lines_are_clipped(ws: Path) -> None:
    (ws / "min.js").write_text("var a=1;" * 200 + "\n")
    result = call(ws, "search", pattern="var")
    assert "more characters on this line" in result
    assert len(result) < 600


def test_factories_accept_strings(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    for make in (read_file_tool, write_file_tool, edit_file_tool, list_dir_tool, search_tool):
        assert make(str(ws)).function is not None
    assert "a.txt" in list_dir_tool(str(ws)).function()
