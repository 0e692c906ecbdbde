"""`read_result`: page through a tool result that the model saw only in part."""

from __future__ import annotations

from typing import Annotated

from harness.errors import ToolError
from harness.tools.context import ToolContext
from harness.tools.decorator import tool
from harness.tools.spec import ToolSpec
from harness.tools.toolset import READ_RESULT

__all__ = ["PAGE_CHARS", "read_result_tool"]

PAGE_CHARS = 3000
"""Characters returned per page unless the model asks for fewer."""


async def _read_result(
    context: ToolContext,
    call_id: Annotated[str, "The id of the call whose result was cut."],
    offset: Annotated[int, "Character position to start at (0 or more)."] = 0,
    length: Annotated[int, f"How many characters to read (1 to {PAGE_CHARS})."] = PAGE_CHARS,
) -> str:
    """Read part of an earlier tool result that was too long to show whole.

    Use it when a result ends with a note saying how many characters it has.
    """
    length = max(1, min(length, PAGE_CHARS))
    text = await context.results.load(context.run_id, call_id)
    if text is None:
        raise ToolError(
            f"No stored result for call_id {call_id!r} in this run.",
            hint="Use the call_id quoted in the note at the end of a cut result, e.g. "
            'read_result(call_id="call_abc123"). Results that were shown whole are not '
            "stored: read them in the conversation instead.",
        )
    if not 0 <= offset < len(text):
        raise ToolError(
            f"offset {offset} is past the end: the result has {len(text):,} characters.",
            hint=f"Use an offset from 0 to {max(0, len(text) - 1)}; offset=0 reads from the start.",
        )
    end = min(len(text), offset + length)
    more = f" Next: offset={end}." if end < len(text) else " This is the end."
    header = f"[characters {offset:,}-{end:,} of {len(text):,}.{more}]"
    return f"{header}\n{text[offset:end]}"


def read_result_tool() -> ToolSpec:
    """The `read_result` tool; add it to a toolset to keep long results pageable."""
    return tool(name=READ_RESULT, side_effects="none", max_result_chars=PAGE_CHARS + 200)(
        _read_result
    )
