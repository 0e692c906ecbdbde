"""One workspace rule for every built-in tool, checked once, before a run exists."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import Agent, Harness
from harness.errors import ConfigError
from harness.runtime import Settings
from harness.testing import ScriptedModel, call, reply
from harness.tools.builtin import BUILTIN_TOOLS, BuiltinOptions
from harness.tools.sandbox import Sandbox
from harness.tools.workspaces import WorkspaceRefused, _homes, allowed_workspace

WORKSPACE_TOOLS = ["bash", "read_file", "write_file", "edit_file", "list_dir", "search"]


@pytest.fixture
def home_dot_dir() -> Iterator[Path]:
    """A credentials-like dot-directory in our home (made for the test, then removed)."""
    path = Path(tempfile.mkdtemp(prefix=".harness-test-", dir=Path.home())) / "keys"
    path.mkdir()
    yield path
    shutil.rmtree(path.parent)


REFUSED = ["/", "/etc", "/etc/ssl", "/usr", "/usr/lib", "/bin", "/proc", "/sys", "/dev",
           "/var/lib", "/var/log", "/run", "/boot", "/home", "/tmp", "/opt", "/srv",
           "/var", "/tmp/harness-workspaces"]  # fmt: skip


@pytest.mark.parametrize("path", [p for p in REFUSED if Path(p).is_dir()])
@pytest.mark.parametrize("name", WORKSPACE_TOOLS)
def test_system_and_shared_directories_are_refused_by_every_tool(path: str, name: str) -> None:
    with pytest.raises(WorkspaceRefused, match="as a workspace") as caught:
        BUILTIN_TOOLS[name](BuiltinOptions(workspace=Path(path)))
    assert "harness workspace new" in str(caught.value)


@pytest.mark.parametrize("name", WORKSPACE_TOOLS)
def test_a_home_and_its_dot_directories_are_refused(name: str, home_dot_dir: Path) -> None:
    for path in (Path.home(), home_dot_dir, home_dot_dir.parent):
        with pytest.raises(WorkspaceRefused, match="home"):
            BUILTIN_TOOLS[name](BuiltinOptions(workspace=path))


def test_the_python_installation_is_refused() -> None:
    with pytest.raises(WorkspaceRefused, match="Python installation"):
        allowed_workspace(sys.prefix)


def test_a_symlink_to_a_system_directory_is_judged_by_its_target(tmp_path: Path) -> None:
    (tmp_path / "looks-harmless").symlink_to("/etc")
    with pytest.raises(WorkspaceRefused, match="refusing /etc"):
        allowed_workspace(tmp_path / "looks-harmless")


def test_missing_paths_and_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(WorkspaceRefused, match="does not exist"):
        allowed_workspace(tmp_path / "absent")
    with pytest.raises(WorkspaceRefused, match="not a directory"):
        allowed_workspace(tmp_path / "file")


@pytest.mark.parametrize("name", WORKSPACE_TOOLS)
def test_projects_are_accepted_wherever_they_live(name: str, tmp_path: Path) -> None:
    in_home = Path(tempfile.mkdtemp(prefix="project-", dir=Path.home()))
    try:
        for path in (tmp_path, in_home, Path(__file__).parents[2]):
            BUILTIN_TOOLS[name](BuiltinOptions(workspace=path))
    finally:
        in_home.rmdir()


async def test_a_refused_workspace_fails_submit_and_stores_no_run(tmp_path: Path) -> None:
    agent = Agent(
        model=ScriptedModel([reply("never")]), tools=["read_file"], workspace=Path("/etc")
    )
    async with Harness(Settings(home=tmp_path)) as harness:
        with pytest.raises(WorkspaceRefused, match="system directory"):
            await harness.submit(agent, "read shadow")
        assert await harness.list() == []


@pytest.mark.skipif(os.geteuid() != 0, reason="root's own project: the idmapped case")
async def test_an_agent_as_root_works_in_its_own_root_owned_project(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    project = Path(tempfile.mkdtemp(prefix="home-")) / "proj"  # under a 0700 parent
    project.mkdir()
    try:
        model = ScriptedModel([
            reply(None, call("bash", {"command": "echo made > made.txt && id -u"})),
            reply(None, call("read_file", {"path": "made.txt"})),
            reply("done"),
        ])  # fmt: skip
        agent = Agent(model=model, tools=["bash", "read_file"], workspace=project)
        async with Harness(Settings(home=tmp_path)) as harness:
            result = await harness.wait(await harness.submit(agent, "make a file"))
        assert result.output == "done"
        tool_messages = [m.content or "" for m in result.messages if m.role == "tool"]
        assert tool_messages[0].startswith("1000\n")
        assert "made" in tool_messages[1]
        assert (project / "made.txt").stat().st_uid == 0
    finally:
        shutil.rmtree(project.parent)


async def test_harness_own_home_inside_the_project_is_out_of_every_tools_reach(
    sandbox: Sandbox,
) -> None:
    project = Path(tempfile.mkdtemp(prefix="proj-", dir="/tmp/harness-workspaces"))
    home = project / ".harness"  # the default: ./.harness, in the directory harness runs in
    try:
        (project / "notes.txt").write_text("mine\n")
        model = ScriptedModel(
            [
                reply(
                    None,
                    call(
                        "bash",
                        {"command": "ls -A .harness | wc -l; touch .harness/forged 2>&1; ls -A"},
                    ),
                ),
                reply(None, call("read_file", {"path": ".harness/harness.db"})),
                reply(None, call("write_file", {"path": "./.harness/harness.db", "content": "x"})),
                reply(None, call("list_dir", {"path": "."})),
                reply(None, call("search", {"pattern": "SQLite"})),
                reply("done"),
            ]
        )
        tools = ["bash", "read_file", "write_file", "list_dir", "search"]
        agent = Agent(model=model, tools=tools, workspace=project)
        async with Harness(Settings(home=home)) as harness:
            result = await harness.wait(await harness.submit(agent, "forge an approval"))
        outputs = [m.content or "" for m in result.messages if m.role == "tool"]
        listed, read, written, entries, found = outputs
        assert listed.startswith("0\n")  # commands see an empty directory in its place
        assert "Read-only file system" in listed
        assert "belongs to harness itself" in read
        assert "belongs to harness itself" in written
        assert ".harness" not in entries
        assert "notes.txt" in entries
        assert ".harness" not in found
        assert not (home / "forged").exists()
        assert (home / "harness.db").stat().st_size > 0
    finally:
        shutil.rmtree(project)


@pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root")
def test_a_bind_mount_of_a_system_directory_is_refused() -> None:
    mirror = Path(tempfile.mkdtemp(prefix="mirror-", dir="/tmp/harness-workspaces"))
    subprocess.run(["mount", "--bind", "/etc", str(mirror)], check=True)
    try:
        with pytest.raises(WorkspaceRefused, match="same directory as /etc"):
            allowed_workspace(mirror)
    finally:
        subprocess.run(["umount", str(mirror)], check=True)
        mirror.rmdir()


def test_a_directory_that_contains_a_home_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "users" / "ada").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "users" / "ada"))
    _homes.cache_clear()
    try:
        with pytest.raises(WorkspaceRefused, match="contains the home directory"):
            allowed_workspace(tmp_path / "users")
    finally:
        monkeypatch.undo()
        _homes.cache_clear()


@pytest.mark.parametrize(
    ("where", "why"),
    [("nested", "could move it out of the tools' guard"),
     ("symlink", "could move it out of the tools' guard"),
     ("itself", "is the workspace .* itself")],
)  # fmt: skip
async def test_a_home_the_sandbox_could_move_is_refused_before_the_run(
    tmp_path: Path, where: str, why: str
) -> None:
    project = Path(tempfile.mkdtemp(prefix="proj-", dir="/tmp/harness-workspaces"))
    try:
        if where == "nested":
            home = project / "sub" / ".harness"
        elif where == "itself":
            home = project
        else:
            (tmp_path / "real-home").mkdir()
            home = project / ".harness"
            home.symlink_to(tmp_path / "real-home")
        model = ScriptedModel([reply("never")])
        agent = Agent(model=model, tools=["read_file"], workspace=project)
        store = tmp_path / "runs.db"
        async with Harness(Settings(home=home), store=str(store)) as harness:
            with pytest.raises(ConfigError, match=why):
                await harness.submit(agent, "go")
            assert await harness.list() == []
    finally:
        shutil.rmtree(project)


async def test_a_missing_home_in_the_project_is_made_before_any_command_runs(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    project = Path(tempfile.mkdtemp(prefix="proj-", dir="/tmp/harness-workspaces"))
    home = project / ".harness"  # the store lives elsewhere, so nothing else makes it
    try:
        model = ScriptedModel([
            reply(None, call("bash", {"command": "mkdir -p .harness && "
                                      "echo '[mcp.x]' > .harness/harness.toml; echo rc=$?"})),
            reply("done"),
        ])  # fmt: skip
        agent = Agent(model=model, tools=["bash"], workspace=project)
        async with Harness(Settings(home=home), store=str(tmp_path / "runs.db")) as harness:
            result = await harness.wait(await harness.submit(agent, "plant a config"))
        (output,) = [m.content or "" for m in result.messages if m.role == "tool"]
        assert "Read-only file system" in output
        assert home.is_dir()
        assert not (home / "harness.toml").exists()
    finally:
        shutil.rmtree(project)


async def test_harness_own_installation_in_the_project_is_out_of_reach(
    tmp_path: Path, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = Path(tempfile.mkdtemp(prefix="proj-", dir="/tmp/harness-workspaces"))
    venv = project / ".venv"  # as when harness is installed in the project's own venv
    (venv / "lib").mkdir(parents=True)
    (venv / "lib" / "harness.py").write_text("# harness's code\n")
    monkeypatch.setattr(sys, "prefix", str(venv))
    try:
        model = ScriptedModel([
            reply(None, call("bash", {"command":
                "ls -A .venv | wc -l; echo evil >> .venv/lib/harness.py 2>&1"})),
            reply(None, call("write_file", {"path": ".venv/lib/harness.py", "content": "x"})),
            reply("done"),
        ])  # fmt: skip
        agent = Agent(model=model, tools=["bash", "write_file"], workspace=project)
        async with Harness(Settings(home=tmp_path / "home")) as harness:
            result = await harness.wait(await harness.submit(agent, "patch harness"))
        listed, written = [m.content or "" for m in result.messages if m.role == "tool"]
        assert listed.startswith("0\n")
        assert "belongs to harness itself" in written
        assert (venv / "lib" / "harness.py").read_text() == "# harness's code\n"
    finally:
        shutil.rmtree(project)
