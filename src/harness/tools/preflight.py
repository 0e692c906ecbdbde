"""One check of a run's workspace before it starts, so a bad one fails once, clearly.

The built-in tools work in one directory. Before a run is created, the directory must pass
the workspace rule (`harness.tools.workspaces`), and when the agent has `bash`, the sandbox
must work here and be able to use it (as root, a directory of another owner needs an
idmapped mount the kernel accepts). Otherwise the run is not created: the error says what
is wrong and what to do, instead of every tool call failing with it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from harness.errors import ConfigError
from harness.tools.spec import ToolSpec
from harness.tools.workspaces import allowed_workspace

__all__ = ["WORKSPACE_TOOLS", "check_workspace_tools"]

WORKSPACE_TOOLS: Final = frozenset(
    {"bash", "read_file", "write_file", "edit_file", "list_dir", "search"}
)
"""The built-in tools that work in the agent's workspace."""


def check_workspace_tools(
    tools: Sequence[ToolSpec | str], workspace: Path | None, *, allow_unsandboxed: bool
) -> Path | None:
    """Check the workspace that the built-in tools among `tools` would work in.

    Blocks for the sandbox probe the first time (about 20 ms): call it from a thread in
    async code.

    Args:
        tools: The agent's tools; only built-in tools named by string are concerned.
        workspace: Their directory; `None` is the current one.
        allow_unsandboxed: The agent may run bash on the host when no sandbox works.

    Returns:
        The workspace's real path, or `None` when no built-in tool uses one.

    Raises:
        ConfigError: The directory breaks the workspace rule, or bash cannot use it: the
            message says why and what to do.
    """
    names = {tool for tool in tools if isinstance(tool, str)}
    if not names & WORKSPACE_TOOLS:
        return None
    real = allowed_workspace(workspace if workspace is not None else Path.cwd())
    if "bash" in names:
        _check_sandbox(real, allow_unsandboxed=allow_unsandboxed)
    return real


def _check_sandbox(workspace: Path, *, allow_unsandboxed: bool) -> None:
    from harness.tools.sandbox import Sandbox  # loads on first use, not on import
    from harness.tools.sandbox.workspace import check_workspace

    sandbox = Sandbox()
    status = sandbox.probe()
    if status.available:
        mount = check_workspace(workspace, uid=sandbox.uid)
        if mount.idmap is not None:
            _refuse_setid_files(workspace, mount.idmap.uid)
    elif not allow_unsandboxed:
        raise ConfigError(
            f"bash cannot run: no sandbox works here ({status.detail}). Fix: {status.fix}. "
            "Or allow commands on the host, each approved by you: --unsandboxed "
            "(allow_unsandboxed=True in Python)"
        )


def _refuse_setid_files(workspace: Path, owner: int) -> None:
    """Refuse a project that holds setuid/setgid files of the owner commands act as.

    Through the idmapped mount a command may write such a file, and a write through a
    shared memory mapping keeps its bits: it would become a program of the owner's
    (root's) with the command's content. Nothing else can make one (see the seccomp filter).
    """
    found = _setid_files(workspace, owner)
    if found:
        shown = ", ".join(str(path) for path in found[:3])
        raise ConfigError(
            f"the workspace {workspace} holds setuid or setgid files of uid {owner} ({shown}"
            f"{', ...' if len(found) > 3 else ''}): a command could change what they run. "
            "Remove their setuid/setgid bits (chmod u-s,g-s FILE), or give the agent a "
            "workspace made with `harness workspace new`"
        )


def _setid_files(root: Path, owner: int) -> list[Path]:
    found: list[Path] = []
    for directory, _, files, fd in os.fwalk(root):  # links are never followed
        for name in files:
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            setid = info.st_mode & (stat.S_ISUID | stat.S_ISGID)
            if setid and stat.S_ISREG(info.st_mode) and info.st_uid == owner:
                found.append(Path(directory) / name)
                if len(found) > 3:
                    return found
    return found
