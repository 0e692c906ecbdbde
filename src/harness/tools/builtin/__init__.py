"""Tools that ship with harness, and how an agent refers to them by name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Final

from harness.errors import ToolDefinitionError
from harness.tools.builtin.bash import bash_tool, clean_output
from harness.tools.spec import ToolSpec

__all__ = ["BUILTIN_TOOLS", "bash_tool", "builtin_tool", "clean_output"]


def _bash(workspace: Path | None) -> ToolSpec:
    return bash_tool(cwd=workspace)


BUILTIN_TOOLS: Final[dict[str, Callable[[Path | None], ToolSpec]]] = {"bash": _bash}
"""Makers of the built-in tools, by the name an agent uses for them."""


def builtin_tool(name: str, *, workspace: Path | None = None) -> ToolSpec:
    """Make the built-in tool called `name`, working in `workspace`.

    Args:
        name: The built-in tool's name, e.g. `"bash"`.
        workspace: Directory the tool works in; `None` is the current directory.

    Returns:
        The tool's spec, with its default settings.

    Raises:
        ToolDefinitionError: There is no built-in tool of that name.
    """
    make = BUILTIN_TOOLS.get(name)
    if make is None:
        known = ", ".join(sorted(BUILTIN_TOOLS))
        raise ToolDefinitionError(f"No built-in tool is named {name!r}; built-in tools: {known}.")
    return make(workspace)
