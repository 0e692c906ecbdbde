"""harness: a runtime for LLM agents that keeps working when models and tools misbehave.

The public surface is re-exported here; everything else is an implementation detail.
Importing `harness` does no I/O and loads nothing else: each name is imported on first
use (PEP 562), so a command that needs only part of harness pays only for that part.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.core import Limits, Message, RunEvent, RunResult, ToolCall, Usage
    from harness.errors import ConfigError, HarnessError, ModelError, ToolError
    from harness.gateway import Model, ModelRequest, ModelResponse, ModelSettings, resolve_model
    from harness.runtime import Agent, Harness
    from harness.tools import Toolset, ToolSpec, tool

__version__ = "0.1.0"

_HOMES = {
    "harness.core": ("Limits", "Message", "RunEvent", "RunResult", "ToolCall", "Usage"),
    "harness.errors": ("ConfigError", "HarnessError", "ModelError", "ToolError"),
    "harness.gateway": ("Model", "ModelRequest", "ModelResponse", "ModelSettings", "resolve_model"),
    "harness.runtime": ("Agent", "Harness"),
    "harness.tools": ("ToolSpec", "Toolset", "tool"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "Agent",
    "ConfigError",
    "Harness",
    "HarnessError",
    "Limits",
    "Message",
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "RunEvent",
    "RunResult",
    "ToolCall",
    "ToolError",
    "ToolSpec",
    "Toolset",
    "Usage",
    "__version__",
    "resolve_model",
    "tool",
]


def __getattr__(name: str) -> Any:
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
