"""The file tools stay in their workspace: no `..`, no absolute paths, no symlinks, right owner.

A sandboxed process controls the workspace and may plant symlinks to host files
(research/sandbox.md §2.6); the harness, possibly root, must never read or write through them.
"""

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness.core import Limits, ToolCall
from harness.errors import ToolError
from harness.tools import Toolset
from harness.tools.builtin._fs import Workspace
from harness.tools.builtin.files import file_tools, list_dir_tool, search_tool

SECRET = "TOP SECRET host data\n"
SANDBOX_UID = 65534


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A host file outside the workspace, and a directory holding it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "secret.txt"
    path.write_text(SECRET)
    return path


def call(workspace: Path, name: str, **arguments: Any) -> str:
    spec = next(spec for spec in file_tools(workspace) if spec.name == name)
    return spec.function(**arguments)


def refusal(workspace: Path, name: str, **arguments: Any) -> ToolError:
    with pytest.raises(ToolError) as caught:
        call(workspace, name, **arguments)
    return caught.value


async def model_sees(workspace: Path, name: str, **arguments: Any) -> str:
    call_ = ToolCall(id="call_1", name=name, arguments=json.dumps(arguments))
    outcome = await Toolset(file_tools(workspace)).execute(call_, limits=Limits())
    assert outcome.status == "tool_error"
    assert outcome.message.content is not None
    return outcome.message.content


TOOL_ARGUMENTS: dict[str, dict[str, str]] = {
    "read_file": {},
    "write_file": {"content": "pwned\n"},
    "edit_file": {"old_text": "TOP", "new_text": "pwned"},
    "list_dir": {},
    "search": {"pattern": "SECRET"},
}
ALL_TOOLS = list(TOOL_ARGUMENTS)


# --- paths that leave the workspace ----------------------------------------------------


@pytest.mark.parametrize("tool", ALL_TOOLS)
@pytest.mark.parametrize(
    "path", ["../outside/secret.txt", "a/../../outside/secret.txt", "..", "x/../../../etc"]
)
def test_dotdot_escapes_are_refused(ws: Path, secret: Path, tool: str, path: str) -> None:
    (ws / "a").mkdir()
    error = refusal(ws, tool, path=path, **TOOL_ARGUMENTS[tool])
    assert f"{path!r} uses ..:" in error.message
    assert "cannot reach anything outside the workspace" in error.message
    assert error.hint is not None
    assert "inside the workspace" in error.hint
    assert secret.read_text() == SECRET


@pytest.mark.parametrize("tool", ALL_TOOLS)
def test_absolute_paths_are_refused(ws: Path, secret: Path, tool: str) -> None:
    for path in ("/etc/passwd", str(secret)):
        error = refusal(ws, tool, path=path, **TOOL_ARGUMENTS[tool])
        assert f"{path!r} is an absolute path" in error.message
    assert secret.read_text() == SECRET
    assert not Path("/etc/passwd").read_text().startswith("pwned")


async def test_the_model_is_told_what_is_allowed(ws: Path) -> None:
    message = await model_sees(ws, "read_file", path="/etc/passwd")
    assert message == (
        "Tool 'read_file' failed: '/etc/passwd' is an absolute path: the file tools take only "
        "paths relative to the workspace root, without '..', and cannot reach anything "
        "outside the workspace.\n"
        "Hint: Give a path inside the workspace, relative to its root, e.g. 'src/main.py'."
    )


def test_absolute_path_inside_the_workspace_gets_its_relative_form(ws: Path) -> None:
    (ws / "src").mkdir()
    error = refusal(ws, "read_file", path=str(ws / "src" / "m.py"))
    assert error.hint == "Write it as 'src/m.py'."


def test_dotdot_that_stays_inside_gets_its_short_form(ws: Path) -> None:
    error = refusal(ws, "write_file", path="a/../b.txt", content="x")
    assert error.hint == "Write it as 'b.txt'."
    assert not (ws / "a").exists()
    assert not (ws / "b.txt").exists()


def test_nul_in_a_path_is_refused(ws: Path) -> None:
    assert "NUL" in refusal(ws, "read_file", path="a\0b").message


# --- a symlink in the workspace to a host file ------------------------------------------


@pytest.fixture
def planted(ws: Path, secret: Path) -> Path:
    """`leak.txt` in the workspace, a symlink to the host's secret."""
    link = ws / "leak.txt"
    link.symlink_to(secret)
    return link


async def test_read_through_symlink_is_refused(ws: Path, secret: Path, planted: Path) -> None:
    message = await model_sees(ws, "read_file", path="leak.txt")
    assert "SECRET" not in message.replace(str(secret), "")
    assert f"'leak.txt' is a symbolic link (-> {str(secret)!r}) and is refused" in message
    assert "never follow symbolic links" in message
    assert "Hint: Use the path of the real file inside the workspace" in message


def test_write_through_symlink_does_not_touch_the_target(
    ws: Path, secret: Path, planted: Path
) -> None:
    error = refusal(ws, "write_file", path="leak.txt", content="pwned\n")
    assert "'leak.txt' is a symbolic link" in error.message
    assert secret.read_text() == SECRET
    assert planted.is_symlink()


def test_write_through_dangling_symlink_creates_nothing(ws: Path, tmp_path: Path) -> None:
    target = tmp_path / "outside-new.txt"
    (ws / "new.txt").symlink_to(target)
    error = refusal(ws, "write_file", path="new.txt", content="pwned\n")
    assert "symbolic link" in error.message
    assert not target.exists()


def test_edit_through_symlink_is_refused(ws: Path, secret: Path, planted: Path) -> None:
    error = refusal(ws, "edit_file", path="leak.txt", old_text="TOP", new_text="pwned")
    assert "symbolic link" in error.message
    assert secret.read_text() == SECRET


def test_list_shows_the_symlink_without_following_it(ws: Path, secret: Path, planted: Path) -> None:
    result = call(ws, "list_dir")
    assert result.splitlines()[1:] == [f"leak.txt -> {secret}  (symbolic link, not followed)"]
    assert "SECRET" not in result.replace(str(secret), "")


def test_search_does_not_follow_the_symlink(ws: Path, planted: Path) -> None:
    (ws / "own.txt").write_text("nothing here\n")
    result = call(ws, "search", pattern="TOP SECRET")
    assert result.startswith("No matches for 'TOP SECRET' in '.' (1 text file searched)")


def test_search_or_list_at_a_symlink_path_is_refused(ws: Path, planted: Path) -> None:
    assert "symbolic link" in refusal(ws, "search", pattern="TOP", path="leak.txt").message
    assert "symbolic link" in refusal(ws, "list_dir", path="leak.txt").message


def test_symlink_inside_the_workspace_is_refused_too(ws: Path) -> None:
    (ws / "real.txt").write_text("real\n")
    (ws / "alias.txt").symlink_to("real.txt")
    error = refusal(ws, "read_file", path="alias.txt")
    assert "'alias.txt' is a symbolic link (-> 'real.txt')" in error.message
    refusal(ws, "write_file", path="alias.txt", content="x")
    assert (ws / "real.txt").read_text() == "real\n"


# --- a symlinked directory component -----------------------------------------------------


@pytest.fixture
def linked_dir(ws: Path, secret: Path) -> Path:
    """`docs` in the workspace, a symlink to the host directory that holds the secret."""
    link = ws / "docs"
    link.symlink_to(secret.parent, target_is_directory=True)
    return link


@pytest.mark.parametrize("tool", ALL_TOOLS)
def test_symlinked_directory_component_is_refused(
    ws: Path, secret: Path, linked_dir: Path, tool: str
) -> None:
    error = refusal(ws, tool, path="docs/secret.txt", **TOOL_ARGUMENTS[tool])
    assert "'docs/secret.txt' goes through 'docs', which is a symbolic link" in error.message
    assert secret.read_text() == SECRET


def test_write_into_a_symlinked_directory_creates_nothing(
    ws: Path, secret: Path, linked_dir: Path
) -> None:
    refusal(ws, "write_file", path="docs/new/evil.txt", content="pwned")
    refusal(ws, "write_file", path="docs/evil.txt", content="pwned")
    assert sorted(os.listdir(secret.parent)) == ["secret.txt"]


def test_list_and_search_of_a_symlinked_directory_are_refused(ws: Path, linked_dir: Path) -> None:
    assert "symbolic link" in refusal(ws, "list_dir", path="docs").message
    assert "symbolic link" in refusal(ws, "search", pattern="SECRET", path="docs").message
    deep = call(ws, "list_dir", depth=5)
    assert deep.splitlines()[1:] == [
        f"docs -> {linked_dir.readlink()}  (symbolic link, not followed)"
    ]
    assert "No matches" in call(ws, "search", pattern="SECRET")


def test_deeper_symlinked_component(ws: Path, secret: Path) -> None:
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "c").symlink_to(secret.parent)
    error = refusal(ws, "read_file", path="a/b/c/secret.txt")
    assert "goes through 'a/b/c', which is a symbolic link" in error.message


# --- other things that are not plain files ----------------------------------------------


def test_fifo_is_refused_without_blocking(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    assert "not a regular file" in refusal(ws, "read_file", path="pipe").message
    assert "not a regular file" in refusal(ws, "write_file", path="pipe", content="x").message
    assert "No matches" in call(ws, "search", pattern="x")


def test_edit_writes_through_the_descriptor_it_checked(ws: Path, secret: Path) -> None:
    """A swap of the file for a symlink while the edit runs reaches the original file only."""
    original = ws / "notes.txt"
    original.write_text("draft\n")

    def swap_then_change(data: bytes) -> bytes:
        original.rename(ws / "moved.txt")
        original.symlink_to(secret)
        return data.replace(b"draft", b"final")

    Workspace(ws).update("notes.txt", swap_then_change, max_bytes=1 << 20)
    assert (ws / "moved.txt").read_text() == "final\n"
    assert secret.read_text() == SECRET


# --- ownership when the harness is root and the workspace is the sandbox's --------------


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")


@needs_root
def test_created_files_and_directories_belong_to_the_workspace_owner(ws: Path) -> None:
    os.chown(ws, SANDBOX_UID, SANDBOX_UID)
    call(ws, "write_file", path="pkg/sub/mod.py", content="x = 1\n")
    for path in (ws / "pkg", ws / "pkg" / "sub", ws / "pkg" / "sub" / "mod.py"):
        info = path.stat()
        assert (info.st_uid, info.st_gid) == (SANDBOX_UID, SANDBOX_UID), path


@needs_root
def test_edits_keep_the_owner(ws: Path) -> None:
    os.chown(ws, SANDBOX_UID, SANDBOX_UID)
    call(ws, "write_file", path="a.txt", content="one\n")
    call(ws, "edit_file", path="a.txt", old_text="one", new_text="two")
    call(ws, "write_file", path="a.txt", content="three\n")
    info = (ws / "a.txt").stat()
    assert (info.st_uid, info.st_gid) == (SANDBOX_UID, SANDBOX_UID)
    assert (ws / "a.txt").read_text() == "three\n"


@needs_root
def test_existing_directories_keep_their_owner(ws: Path) -> None:
    os.chown(ws, SANDBOX_UID, SANDBOX_UID)
    (ws / "mine").mkdir()  # root's, made by someone else
    call(ws, "write_file", path="mine/new.txt", content="x")
    assert (ws / "mine").stat().st_uid == 0
    assert (ws / "mine" / "new.txt").stat().st_uid == SANDBOX_UID


def test_files_in_the_harness_own_workspace_keep_the_harness_owner(ws: Path) -> None:
    call(ws, "write_file", path="d/a.txt", content="x")
    assert (ws / "d" / "a.txt").stat().st_uid == os.geteuid()
    assert (ws / "d").stat().st_uid == os.geteuid()


# --- resources -----------------------------------------------------------------------------


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_no_descriptor_leaks(ws: Path, secret: Path, linked_dir: Path) -> None:
    for n in range(30):
        (ws / "d" / f"s{n}").mkdir(parents=True)
        (ws / "d" / f"s{n}" / "f.txt").write_text("hit\n")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("write_file", {"path": "a/b.txt", "content": "hit\n"}),
        ("read_file", {"path": "a/b.txt"}),
        ("edit_file", {"path": "a/b.txt", "old_text": "hit", "new_text": "hat"}),
        ("list_dir", {"depth": 3}),
        ("search", {"pattern": "hit"}),
        ("read_file", {"path": "docs/secret.txt"}),
        ("write_file", {"path": "docs/x/y.txt", "content": ""}),
        ("read_file", {"path": "a/missing.txt"}),
    ]
    before = open_fds()
    for name, arguments in calls * 3:
        with contextlib.suppress(ToolError):
            call(ws, name, **arguments)
    list_dir_tool(ws, max_entries=3).function(depth=3)  # the walk is closed early
    search_tool(ws, max_matches=2).function(pattern="hit")
    assert open_fds() == before


def test_search_skips_files_over_the_size_cap(ws: Path) -> None:
    (ws / "small.txt").write_text("needle\n")
    with (ws / "huge.txt").open("wb") as handle:
        handle.write(b"needle\n")
        handle.truncate(9 << 20)
    result = call(ws, "search", pattern="needle")
    assert result.splitlines()[1:] == ["small.txt:1: needle"]
    assert "1 binary, unreadable or over 8 MiB skipped" in result
