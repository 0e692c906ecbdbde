"""harness: a runtime for LLM agents that keeps working when models and tools misbehave.

The public surface is re-exported here; everything else is an implementation detail.
Importing `harness` does no I/O.
"""

from harness.core import Limits, Message, RunEvent, RunResult, ToolCall, Usage
from harness.errors import ConfigError, HarnessError, ModelError, ToolError
from harness.gateway import Model, ModelRequest, ModelResponse, ModelSettings, resolve_model
from harness.runtime import Agent, Harness
from harness.tools import Toolset, ToolSpec, tool

__version__ = "0.1.0"

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
