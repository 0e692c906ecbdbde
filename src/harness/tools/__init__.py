"""The tool protocol: declaring tools, validating their arguments, running their calls.

Declare a tool with `@tool` on a typed, documented function, or with
`ToolSpec.from_schema`; put tools in a `Toolset`; `Toolset.execute` runs one call and
turns every failure into a `tool` message the model can act on.
"""

from harness.errors import ToolError
from harness.tools.builtin import bash_tool
from harness.tools.decorator import tool
from harness.tools.results import NO_OUTPUT, render_result, truncate
from harness.tools.spec import Approval, SideEffects, ToolSpec
from harness.tools.toolset import ToolOutcome, Toolset, ToolStatus
from harness.tools.validation import InvalidArguments, Violation

__all__ = [
    "NO_OUTPUT",
    "Approval",
    "InvalidArguments",
    "SideEffects",
    "ToolError",
    "ToolOutcome",
    "ToolSpec",
    "ToolStatus",
    "Toolset",
    "Violation",
    "bash_tool",
    "render_result",
    "tool",
    "truncate",
]
