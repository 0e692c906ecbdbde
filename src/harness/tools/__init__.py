"""The tool protocol: declaring tools, validating their arguments, running their calls.

Declare a tool with `@tool` on a typed, documented function, or with
`ToolSpec.from_schema`; put tools in a `Toolset`; `Toolset.execute` runs one call and
turns every failure into a `tool` message the model can act on.
"""

from typing import TYPE_CHECKING, Any

from harness.errors import ToolError
from harness.tools.approvals import (
    ApprovalDecision,
    ApprovalHandler,
    ApprovalPolicy,
    ApprovalRequest,
    ApprovalRule,
)
from harness.tools.audit import AuditLog, AuditRecord, MemoryAuditLog
from harness.tools.context import MemoryResultStore, ResultStore, ToolContext, ToolResult
from harness.tools.decorator import tool
from harness.tools.results import NO_OUTPUT, render_result, truncate
from harness.tools.spec import Approval, SideEffects, ToolSpec
from harness.tools.toolset import READ_RESULT, ToolOutcome, Toolset, ToolStatus
from harness.tools.validation import InvalidArguments, Violation

if TYPE_CHECKING:
    from harness.tools.builtin import bash_tool
    from harness.tools.builtin.read_result import read_result_tool

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
    # The built-in tools pull in the sandbox and file-system code: load them on first use.
    if name == "bash_tool":
        from harness.tools.builtin import bash_tool

        return bash_tool
    if name == "read_result_tool":
        from harness.tools.builtin.read_result import read_result_tool

        return read_result_tool
    raise AttributeError(f"module 'harness.tools' has no attribute {name!r}")
