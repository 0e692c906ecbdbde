"""Tools that ship with harness, and how an agent refers to them by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from harness.errors import ToolDefinitionError
from harness.tools.builtin.bash import bash_tool, clean_output
from harness.tools.builtin.files import (
    edit_file_tool,
    file_tools,
    list_dir_tool,
    read_file_tool,
    search_tool,
    write_file_tool,
)
from harness.tools.builtin.messages import send_message_tool, wait_for_message_tool
from harness.tools.spec import ToolSpec

__all__ = [
    "BUILTIN_TOOLS",
    "DEFAULT_TOOLS",
    "BuiltinOptions",
    "bash_tool",
    "builtin_tool",
    "clean_output",
    "edit_file_tool",
    "file_tools",
    "list_dir_tool",
    "read_file_tool",
    "search_tool",
    "write_file_tool",
]


@dataclass(frozen=True, kw_only=True)
class BuiltinOptions:
    """What the built-in tools of one agent share."""

    workspace: Path | None = None
    """The directory the tools work in; `None` is the current directory."""
    network: bool = False
    """Whether bash commands get the host's network (calls then need approval)."""
    allow_unsandboxed: bool = False
    """Run bash commands on the host when no sandbox works (each then needs approval)."""
    private: tuple[Path, ...] = ()
    """Directories inside the workspace out of every tool's reach: harness's own home
    (its store holds approvals and audit). Hidden from bash, refused by the file tools."""


def _bash(options: BuiltinOptions) -> ToolSpec:
    return bash_tool(
        cwd=options.workspace,
        network=options.network,
        allow_unsandboxed=options.allow_unsandboxed,
        private=options.private,
    )


BUILTIN_TOOLS: Final[dict[str, Callable[[BuiltinOptions], ToolSpec]]] = {
    "bash": _bash,
    "read_file": lambda options: read_file_tool(options.workspace, private=options.private),
    "write_file": lambda options: write_file_tool(options.workspace, private=options.private),
    "edit_file": lambda options: edit_file_tool(options.workspace, private=options.private),
    "list_dir": lambda options: list_dir_tool(options.workspace, private=options.private),
    "search": lambda options: search_tool(options.workspace, private=options.private),
    "send_message": lambda _options: send_message_tool(),
    "wait_for_message": lambda _options: wait_for_message_tool(),
}
"""Makers of the built-in tools, by the name an agent uses for them."""

DEFAULT_TOOLS: Final = ("bash", "read_file", "write_file", "edit_file", "list_dir", "search")
"""What `harness run` gives an agent unless told otherwise."""


def builtin_tool(
    name: str,
    *,
    workspace: Path | None = None,
    network: bool = False,
    allow_unsandboxed: bool = False,
    private: tuple[Path, ...] = (),
) -> ToolSpec:
    """Make the built-in tool called `name`, working in `workspace`.

    Args:
        name: The built-in tool's name, e.g. `"bash"`.
        workspace: Directory the tool works in; `None` is the current directory.
        network: For bash: give commands the host's network.
        allow_unsandboxed: For bash: run on the host when no sandbox works.
        private: Directories inside the workspace that the tool must not reach.

    Returns:
        The tool's spec, with its default settings.

    Raises:
        ToolDefinitionError: There is no built-in tool of that name.
    """
    make = BUILTIN_TOOLS.get(name)
    if make is None:
        known = ", ".join(sorted(BUILTIN_TOOLS))
        raise ToolDefinitionError(f"No built-in tool is named {name!r}; built-in tools: {known}.")
    options = BuiltinOptions(
        workspace=workspace,
        network=network,
        allow_unsandboxed=allow_unsandboxed,
        private=private,
    )
    return make(options)
