"""Shared vocabulary of harness: pure data, no I/O."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {
    "harness.core.clock": ("Clock", "SystemClock"),
    "harness.core.codec": ("SCHEMA_VERSION",),
    "harness.core.events": (
        "EVENT_TYPES",
        "EventPayload",
        "EventSink",
        "EventType",
        "RunEvent",
        "summarize",
    ),
    "harness.core.ids": ("new_id",),
    "harness.core.messages": ("Message", "Role", "ToolCall", "ToolDefinition"),
    "harness.core.results": ("RunResult", "TerminationReason"),
    "harness.core.states": ("CLAIMABLE_STATES", "RUN_STATES", "TERMINAL_STATES", "RunState"),
    "harness.core.usage": ("Limits", "Usage"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

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


def __getattr__(name: str) -> Any:
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module 'harness.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
