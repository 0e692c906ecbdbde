"""As root, a user's own directory is the sandbox's workspace, through an idmapped mount.

Commands still run as the unprivileged sandbox uid; the directory is never handed to it.
What they create or change lands owned by the directory's owner, nothing can become setuid
or setgid, links they plant are never followed by harness, and the limits still bind.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.core import Limits, ToolCall
from harness.errors import ConfigError, ToolError
from harness.tools import Toolset, bash_tool
from harness.tools.builtin import edit_file_tool, read_file_tool, write_file_tool
from harness.tools.preflight import check_workspace_tools
from harness.tools.sandbox import Sandbox, SandboxLimits, SandboxUnavailable
from harness.tools.sandbox.idmap import IdmapRefused
from harness.tools.sandbox.probe import run_as
from harness.tools.sandbox.runner import Job, RunSpec
from harness.tools.sandbox.workspace import check_workspace

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="idmapped workspaces are how root runs; as a user, see below"
)

SETID = stat.S_ISUID | stat.S_ISGID


@pytest.fixture
def project() -> Iterator[Path]:
    """A root-owned project directory under a 0700 parent, as /root/myproject would be."""
    private = Path(tempfile.mkdtemp(prefix="home-"))  # 0700, root's: the sandbox uid can't pass
    root = private / "myproject"
    root.mkdir(mode=0o755)
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "README").write_text("root's project\n")
    yield root
    shutil.rmtree(private)


def owners(tree: Path) -> set[tuple[int, int]]:
    found = {(tree.stat().st_uid, tree.stat().st_gid)}
    for path in tree.rglob("*"):
        info = path.lstat()
        found.add((info.st_uid, info.st_gid))
    return found


def setid_files(tree: Path) -> list[Path]:
    return [path for path in tree.rglob("*") if path.lstat().st_mode & SETID]


async def test_commands_change_a_root_project_and_what_they_write_stays_roots(
    sandbox: Sandbox, project: Path
) -> None:
    script = (
        "id -u; echo more >> README; mkdir -p build/out; echo x > build/out/a.txt; "
        "chmod 640 build/out/a.txt; mv src/main.py src/app.py; rm -f nothing; "
        "ln -s README link; ln README hard"
    )
    result = await sandbox.run(script, workspace=project)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("1000\n")
    assert (project / "README").read_text() == "root's project\nmore\n"
    assert (project / "src" / "app.py").exists()
    assert stat.S_IMODE((project / "build" / "out" / "a.txt").stat().st_mode) == 0o640
    assert owners(project) == {(0, 0)}
    assert project.stat().st_uid == 0  # the project was never handed to the sandbox uid


async def test_files_land_owned_by_the_directory_owner_whoever_that_is(
    sandbox: Sandbox, project: Path
) -> None:
    os.chown(project, 1234, 5678)
    result = await sandbox.run("echo new > made.txt && mkdir d && touch d/e", workspace=project)
    assert result.exit_code == 0, result.output
    for made in ("made.txt", "d", "d/e"):
        info = (project / made).stat()
        assert (info.st_uid, info.st_gid) == (1234, 5678)
    # Files of other owners count as "others" to the command: root's README is read-only.
    denied = await sandbox.run("echo x >> README", workspace=project)
    assert denied.exit_code != 0
    assert "Permission denied" in denied.output


SETID_ATTEMPTS = [
    "cp /bin/true sneaky && chmod 4755 sneaky",
    "cp /bin/true sneaky && chmod u+s sneaky",
    "cp /bin/true sneaky && chmod 2755 sneaky",
    "cp /bin/true sneaky && chmod g+s sneaky",
    "install -m 4755 /bin/true sneaky",
    "mkdir -m 2775 shared",
    "mkdir shared && chmod g+s shared",
    "python3 -c 'import os; os.open(\"sneaky\", os.O_CREAT | os.O_WRONLY, 0o4755)'",
    "python3 -c 'import os; os.mkdir(\"sneaky\", 0o6777)'",
    "python3 -c 'import os; os.mknod(\"sneaky\", 0o4755 | 0o100000)'",
    "python3 -c 'import os; os.close(os.open(\".\", os.O_TMPFILE | os.O_WRONLY, 0o4755))'",
    "touch sneaky && python3 -c "
    "'import os; fd = os.open(\"sneaky\", os.O_RDONLY); os.fchmod(fd, 0o4755)'",
    "cp -p /usr/bin/su sneaky",
    "tar -C /tmp -cf /tmp/t.tar . && mkdir x && cp /bin/true /tmp/s && chmod 4755 /tmp/s; "
    "tar -C /tmp -cpf /tmp/u.tar s && tar -xpf /tmp/u.tar",
]


@pytest.mark.parametrize("attempt", SETID_ATTEMPTS)
async def test_nothing_can_become_setuid_or_setgid(
    sandbox: Sandbox, project: Path, attempt: str
) -> None:
    result = await sandbox.run(attempt, workspace=project)
    assert setid_files(project) == [], result.output
    assert owners(project) == {(0, 0)}


async def test_plain_modes_still_work(sandbox: Sandbox, project: Path) -> None:
    script = "touch s && chmod 755 s && chmod u-x s && mkdir -m 700 p && chmod 1777 p"
    result = await sandbox.run(script, workspace=project)
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE((project / "s").stat().st_mode) == 0o655
    assert stat.S_IMODE((project / "p").stat().st_mode) == 0o1777


async def test_links_the_command_plants_are_never_followed_by_harness(
    sandbox: Sandbox, project: Path
) -> None:
    result = await sandbox.run(
        "ln -s /etc/shadow shadow; ln -s / rootfs; ln /etc/passwd pw 2>&1; echo rc=$?",
        workspace=project,
    )
    assert "rc=1" in result.output  # /etc/passwd is not even there to link to
    reader = read_file_tool(project)
    assert reader.function is not None
    for path in ("shadow", "rootfs/etc/shadow"):
        with pytest.raises(Exception, match="symbolic link"):
            reader.function(path=path)
    assert (project / "shadow").is_symlink()
    assert Path("/etc/shadow").stat().st_uid == 0


async def test_writes_outside_the_workspace_still_fail(sandbox: Sandbox, project: Path) -> None:
    parent = project.parent
    script = (
        f"touch /usr/evil; touch /evil; touch /etc/evil; touch {parent}/evil; "
        "touch ../evil; echo done"
    )
    result = await sandbox.run(script, workspace=project)
    assert "done" in result.output
    for path in ("/usr/evil", "/evil", "/etc/evil", f"{parent}/evil"):
        assert not Path(path).exists(), path


FORK_UNTIL_REFUSED = """
import os, time
made = 0
try:
    for _ in range(100):
        if os.fork() == 0:
            time.sleep(1)
            os._exit(0)
        made += 1
except OSError as exc:
    print("refused after", made, exc.errno)
"""


async def test_the_process_limit_still_binds(
    sandbox: Sandbox, project: Path, leftovers: object
) -> None:
    limits = SandboxLimits(nproc=16, wall_s=30)
    result = await sandbox.run(
        f"python3 -c '{FORK_UNTIL_REFUSED}'", workspace=project, limits=limits
    )
    words = result.output.split()
    assert words[:2] == ["refused", "after"], result.output
    assert int(words[2]) < 16
    assert int(words[3]) == 11  # EAGAIN: RLIMIT_NPROC of the sandbox uid


async def test_two_commands_at_once_in_one_workspace_do_not_disturb_each_other(
    sandbox: Sandbox, project: Path
) -> None:
    first = "for i in $(seq 1 300); do echo a$i >> a.log; done; mkdir -p da; echo ok"
    second = "for i in $(seq 1 300); do echo b$i >> b.log; done; mkdir -p db; echo ok"
    results = await asyncio.gather(
        sandbox.run(first, workspace=project), sandbox.run(second, workspace=project)
    )
    assert [result.output for result in results] == ["ok\n", "ok\n"]
    assert (project / "a.log").read_text().split() == [f"a{i}" for i in range(1, 301)]
    assert (project / "b.log").read_text().split() == [f"b{i}" for i in range(1, 301)]
    assert owners(project) == {(0, 0)}


async def test_the_mount_is_seen_by_no_other_process(sandbox: Sandbox, project: Path) -> None:
    result = await sandbox.run("grep -c idmapped /proc/self/mountinfo", workspace=project)
    assert int(result.output) >= 1  # inside: the workspace is an idmapped mount
    host = Path("/proc/self/mountinfo").read_text()
    assert "idmapped" not in host
    assert str(project) not in host


def test_a_filesystem_without_idmapped_mounts_is_refused_once_with_the_fix() -> None:
    base = Path(tempfile.mkdtemp(prefix="ramfs-", dir="/tmp/harness-workspaces"))
    subprocess.run(["mount", "-t", "ramfs", "ramfs", str(base)], check=True)
    try:
        (base / "proj").mkdir()
        with pytest.raises(IdmapRefused) as caught:
            check_workspace(base / "proj")
        message = str(caught.value)
        assert "does not support idmapped mounts" in message
        assert "harness workspace new" in message
        with pytest.raises(IdmapRefused):  # remembered: the kernel is asked once
            check_workspace(base / "proj")
    finally:
        subprocess.run(["umount", str(base)], check=True)
        base.rmdir()


async def test_a_refused_mount_never_runs_the_command_bare(sandbox: Sandbox) -> None:
    base = Path(tempfile.mkdtemp(prefix="ramfs-", dir="/tmp/harness-workspaces"))
    subprocess.run(["mount", "-t", "ramfs", "ramfs", str(base)], check=True)
    try:
        toolset = Toolset([bash_tool(cwd=base, sandbox=sandbox)])
        call = ToolCall(id="c1", name="bash", arguments='{"command": "touch ran"}')
        outcome = await toolset.execute(call, limits=Limits())
        assert outcome.status == "tool_error"
        assert "idmapped" in outcome.output
        assert not (base / "ran").exists()
    finally:
        subprocess.run(["umount", str(base)], check=True)
        base.rmdir()


async def test_a_directory_swapped_after_its_check_is_never_mounted(
    sandbox: Sandbox, project: Path
) -> None:
    checked = check_workspace(project)
    victim = project.parent / "victim"
    victim.mkdir()
    (victim / "secret").write_text("root only\n")
    project.rename(project.parent / "moved")

    def attempt() -> str:
        spec = RunSpec(
            bwrap=sandbox.bwrap, prlimit=sandbox.prlimit, run_as=run_as(sandbox.uid),
            command="cat secret", workspace=checked.path, idmap=checked.idmap,
            mount_point=checked.mount_point, identity=checked.identity, limits=SandboxLimits(),
        )  # fmt: skip
        with pytest.raises(SandboxUnavailable) as caught:
            Job(spec).run()
        return str(caught.value)

    project.symlink_to(victim)  # the same path now leads to another root-owned directory
    assert "Not a directory" in in_a_thread_of_its_own(attempt)
    project.unlink()
    victim.rename(project)  # a different directory under the checked name
    assert "no longer the directory that was checked" in in_a_thread_of_its_own(attempt)


def in_a_thread_of_its_own(work: Callable[[], str]) -> str:
    """Jobs with an idmapped workspace run in a thread made for them, as `Sandbox.run` does."""
    done: list[str] = []
    thread = threading.Thread(target=lambda: done.append(work()))
    thread.start()
    thread.join()
    return done[0]


IO_URING_SETUP = (
    "import ctypes; libc = ctypes.CDLL(None, use_errno=True); params = (ctypes.c_char * 120)(); "
    "print(libc.syscall(425, 8, params), ctypes.get_errno())"
)


async def test_io_uring_is_not_there_to_create_files_past_the_filter(
    sandbox: Sandbox, project: Path
) -> None:
    # io_uring opens and creates files in the kernel, where seccomp never sees the mode: with
    # it, a command could create a setuid file of root's in root's project.
    result = await sandbox.run(f'python3 -c "{IO_URING_SETUP}"', workspace=project)
    assert result.output.split() == ["-1", "38"]  # ENOSYS


def test_the_file_tools_never_write_into_a_setuid_or_setgid_file(project: Path) -> None:
    target = project / "tool"
    target.write_bytes(b"original")
    writer = write_file_tool(project)
    editor = edit_file_tool(project)
    assert writer.function is not None
    assert editor.function is not None
    for mode in (0o4755, 0o2755):
        os.chmod(target, mode)
        with pytest.raises(ToolError, match="setuid or setgid"):
            writer.function(path="tool", content="#!/bin/sh\nid\n")
        with pytest.raises(ToolError, match="setuid or setgid"):
            editor.function(path="tool", old_text="original", new_text="changed")
        assert target.read_bytes() == b"original"
        assert stat.S_IMODE(target.stat().st_mode) == mode


def test_a_thread_enters_a_private_mount_namespace_once_only() -> None:
    from harness.tools.sandbox.idmap import enter_private_mounts

    errors: list[BaseException] = []

    def twice() -> None:
        enter_private_mounts()
        try:
            enter_private_mounts()
        except RuntimeError as exc:
            errors.append(exc)

    thread = threading.Thread(target=twice)
    thread.start()
    thread.join()
    assert len(errors) == 1
    assert "a thread made for one command" in str(errors[0])


def test_a_project_holding_a_setuid_file_of_its_owner_is_refused_before_the_run(
    sandbox: Sandbox, project: Path
) -> None:
    tool = project / "src" / "helper"
    tool.write_bytes(b"#!/bin/sh\n")
    os.chmod(tool, 0o4755)
    with pytest.raises(ConfigError, match="setuid or setgid files of uid 0") as caught:
        check_workspace_tools(["bash"], project, allow_unsandboxed=False)
    assert str(tool) in str(caught.value)
    os.chmod(tool, 0o755)
    assert check_workspace_tools(["bash"], project, allow_unsandboxed=False) == project
