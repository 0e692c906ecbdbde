"""The tool protocol: declaring tools, validating their arguments, running their calls.

Declare a tool with `@tool` on a typed, documented function, or with
`ToolSpec.from_schema`; put tools in a `Toolset`; `Toolset.execute` runs one call and
turns every failure into a `tool` message the model can act on.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.errors import ToolError
    from harness.tools.approvals import (
        ApprovalDecision,
        ApprovalHandler,
        ApprovalPolicy,
        ApprovalRequest,
        ApprovalRule,
    )
    from harness.tools.audit import AuditLog, AuditRecord, MemoryAuditLog
    from harness.tools.builtin import bash_tool
    from harness.tools.builtin.read_result import read_result_tool
    from harness.tools.context import (
        ChildRuns,
        MemoryResultStore,
        ResultStore,
        ToolContext,
        ToolResult,
    )
    from harness.tools.decorator import tool
    from harness.tools.limits import CallSlots
    from harness.tools.results import NO_OUTPUT, render_result, truncate
    from harness.tools.spec import Approval, SideEffects, ToolSpec
    from harness.tools.toolset import READ_RESULT, ToolOutcome, Toolset, ToolStatus
    from harness.tools.validation import InvalidArguments, Violation

_HOMES = {
    "harness.errors": ("ToolError",),
    "harness.tools.approvals": (
        "ApprovalDecision",
        "ApprovalHandler",
        "ApprovalPolicy",
        "ApprovalRequest",
        "ApprovalRule",
    ),
    "harness.tools.audit": ("AuditLog", "AuditRecord", "MemoryAuditLog"),
    "harness.tools.context": (
        "ChildRuns",
        "MemoryResultStore",
        "ResultStore",
        "ToolContext",
        "ToolResult",
    ),
    "harness.tools.decorator": ("tool",),
    "harness.tools.limits": ("CallSlots",),
    "harness.tools.results": ("NO_OUTPUT", "render_result", "truncate"),
    "harness.tools.spec": ("Approval", "SideEffects", "ToolSpec"),
    "harness.tools.toolset": ("READ_RESULT", "ToolOutcome", "Toolset", "ToolStatus"),
    "harness.tools.validation": ("InvalidArguments", "Violation"),
    "harness.tools.builtin": ("bash_tool",),
    "harness.tools.builtin.read_result": ("read_result_tool",),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "NO_OUTPUT",
    "READ_RESULT",
    "Approval",
    "ApprovalDecision",
    "ApprovalHandler",
    "ApprovalPolicy",
    "ApprovalRequest",
    "ApprovalRule",
    "AuditLog",
    "AuditRecord",
    "CallSlots",
    "ChildRuns",
    "InvalidArguments",
    "MemoryAuditLog",
    "MemoryResultStore",
    "ResultStore",
    "SideEffects",
    "ToolContext",
    "ToolError",
    "ToolOutcome",
    "ToolResult",
    "ToolSpec",
    "ToolStatus",
    "Toolset",
    "Violation",
    "bash_tool",
    "read_result_tool",
    "render_result",
    "tool",
    "truncate",
]


def __getattr__(name: str) -> Any:
    # Each name loads its module on first use; the built-in tools (sandbox, file system) too.
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module 'harness.tools' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
