"""Help texts say what their source says: a harness.toml table such as `[agents.NAME]` or
`[runtime]` is shown, not taken for markup and dropped."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness.cli import app as cli

HARNESS = str(Path(sys.executable).parent / "harness")
TABLE = re.compile(r"\[\[?[a-z_]+(?:\.[A-Za-z_]+)*\]\]?")
"""A harness.toml table as help texts name it: `[runtime]`, `[agents.NAME]`, `[[triggers]]`."""


def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every command under `command` (a Click command of Typer's), with its path."""
    found = [(path, command)]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        found += _commands(sub, (*path, name))
    return found


def _texts(command: Any) -> list[str]:
    texts = [command.help or "", command.short_help or ""]
    texts += [getattr(param, "help", None) or "" for param in command.params]
    return texts


def test_every_table_a_help_text_names_is_shown() -> None:
    root = cli.click_command()
    checked = 0
    for path, command in _commands(root):
        named = {t for text in _texts(command) for t in TABLE.findall(text)}
        if not named:
            continue
        shown = subprocess.run(
            [HARNESS, *path, "--help"],
            capture_output=True,
            text=True,
            check=True,
            env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
        ).stdout
        flat = " ".join(shown.replace("│", " ").split())
        missing = [t for t in named if t not in flat]
        assert not missing, f"harness {' '.join(path)} --help drops {missing}:\n{shown}"
        checked += 1
    assert checked >= 4  # run (--agent, --tools, --mcp), serve, temporal, triggers list …
