"""One check of a run's workspace before it starts, so a bad one fails once, clearly.

The built-in tools work in one directory. Before a run is created, the directory must pass
the workspace rule (`harness.tools.workspaces`), and when the agent has `bash`, the sandbox
must work here and be able to use it (as root, a directory of another owner needs an
idmapped mount the kernel accepts). Otherwise the run is not created: the error says what
is wrong and what to do, instead of every tool call failing with it.
"""

from __future__ import annotations

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
        check_workspace(workspace, uid=sandbox.uid)
    elif not allow_unsandboxed:
        raise ConfigError(
            f"bash cannot run: no sandbox works here ({status.detail}). Fix: {status.fix}. "
            "Or allow commands on the host, each approved by you: --unsandboxed "
            "(allow_unsandboxed=True in Python)"
        )
