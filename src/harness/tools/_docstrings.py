"""Reading Google-style docstrings: the tool description and per-parameter descriptions."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

__all__ = ["ParsedDocstring", "parse_docstring"]

_ARGS_SECTIONS: Final = frozenset({"args", "arguments", "parameters", "params"})
_DROPPED_SECTIONS: Final = _ARGS_SECTIONS | {"raises"}
"""Sections written for Python callers, not for the model."""

_SECTION: Final = re.compile(r"([A-Z][A-Za-z ]*):\s*")
_ARG: Final = re.compile(r"\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:(.*)")


@dataclass(frozen=True, kw_only=True, slots=True)
class ParsedDocstring:
    """A docstring split into what the model reads about the tool and its parameters."""

    description: str
    """Summary and body, without the sections meant for Python callers."""
    params: dict[str, str] = field(default_factory=lambda: {})
    """Description of each parameter from the `Args:` section."""


def parse_docstring(doc: str) -> ParsedDocstring:
    """Split a cleaned (dedented) Google-style docstring.

    Args:
        doc: The docstring, as `inspect.getdoc` returns it.

    Returns:
        The description, without the `Args:` and `Raises:` sections, and the parameter
        descriptions found in `Args:`.
    """
    kept: list[str] = []
    params: dict[str, str] = {}
    lines = doc.splitlines()
    index = 0
    while index < len(lines):
        section = _section_name(lines[index])
        if section in _DROPPED_SECTIONS:
            end = _section_end(lines, index + 1)
            if section in _ARGS_SECTIONS:
                params.update(_parse_args(lines[index + 1 : end]))
            index = end
            continue
        kept.append(lines[index])
        index += 1
    return ParsedDocstring(description=_join(kept), params=params)


def _section_name(line: str) -> str | None:
    """The lower-cased name when `line` opens a section (`Args:` at column 0)."""
    match = _SECTION.fullmatch(line)
    return match.group(1).lower() if match else None


def _section_end(lines: list[str], start: int) -> int:
    """Index of the first line after the indented block that starts at `start`."""
    index = start
    while index < len(lines) and (not lines[index].strip() or lines[index][0].isspace()):
        index += 1
    return index


def _parse_args(block: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    indent = min((_indent(line) for line in block if line.strip()), default=0)
    current: str | None = None
    for line in block:
        if not line.strip():
            continue
        match = _ARG.fullmatch(line.strip()) if _indent(line) == indent else None
        if match:
            current = str(match.group(1))
            params[current] = match.group(2).strip()
        elif current is not None:
            params[current] = f"{params[current]} {line.strip()}".strip()
    return params


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _join(lines: list[str]) -> str:
    text = "\n".join(lines).strip()
    return re.sub(r"\n{3,}", "\n\n", text)
