"""Kept for imports of the old name: the messages now live in `harness.tools.feedback`."""

from __future__ import annotations

from harness.tools.feedback import (
    MAX_VIOLATIONS,
    invalid_arguments,
    invalid_json,
    more_available,
    not_an_object,
    parameters_summary,
    tool_crash,
    tool_error,
    tool_timeout,
    unknown_tool,
)

__all__ = [
    "MAX_VIOLATIONS",
    "invalid_arguments",
    "invalid_json",
    "more_available",
    "not_an_object",
    "parameters_summary",
    "tool_crash",
    "tool_error",
    "tool_timeout",
    "unknown_tool",
]
