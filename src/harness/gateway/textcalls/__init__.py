"""Tool calls written as text, for local models whose server does not parse them.

`parse_text` reads one reply; `TextCallStream` reads one while it arrives;
`TextToolCallModel` wraps a `Model` so that the agent loop sees ordinary tool calls;
`TextCallRescueModel` wraps a natively tool-calling `Model` so that calls it writes as text
run too.
"""

from harness.gateway.textcalls._types import MalformedCall, PartialCall, TextParse
from harness.gateway.textcalls.base import TextFormat
from harness.gateway.textcalls.instructions import render_history, render_instructions
from harness.gateway.textcalls.malformed import (
    MALFORMED_TOOL_CALL,
    explain_malformed,
    malformed_call_feedback,
)
from harness.gateway.textcalls.model import TextToolCallModel
from harness.gateway.textcalls.parse import parse_text, resolve_format
from harness.gateway.textcalls.registry import FORMATS, family_format
from harness.gateway.textcalls.rescue import TextCallRescueModel
from harness.gateway.textcalls.stream import TextCallStream

__all__ = [
    "FORMATS",
    "MALFORMED_TOOL_CALL",
    "MalformedCall",
    "PartialCall",
    "TextCallRescueModel",
    "TextCallStream",
    "TextFormat",
    "TextParse",
    "TextToolCallModel",
    "explain_malformed",
    "family_format",
    "malformed_call_feedback",
    "parse_text",
    "render_history",
    "render_instructions",
    "resolve_format",
]
