"""Shared vocabulary of harness: pure data, no I/O."""

from harness.core.clock import Clock, SystemClock
from harness.core.codec import SCHEMA_VERSION
from harness.core.events import (
    EVENT_TYPES,
    EventPayload,
    EventSink,
    EventType,
    RunEvent,
    summarize,
)
from harness.core.ids import new_id
from harness.core.messages import Message, Role, ToolCall, ToolDefinition
from harness.core.results import RunResult, TerminationReason
from harness.core.states import CLAIMABLE_STATES, RUN_STATES, TERMINAL_STATES, RunState
from harness.core.usage import Limits, Usage

__all__ = [
    "CLAIMABLE_STATES",
    "EVENT_TYPES",
    "RUN_STATES",
    "SCHEMA_VERSION",
    "TERMINAL_STATES",
    "Clock",
    "EventPayload",
    "EventSink",
    "EventType",
    "Limits",
    "Message",
    "Role",
    "RunEvent",
    "RunResult",
    "RunState",
    "SystemClock",
    "TerminationReason",
    "ToolCall",
    "ToolDefinition",
    "Usage",
    "new_id",
    "summarize",
]
