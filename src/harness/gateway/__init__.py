"""Layer 1, the model gateway: one `Model` interface over every provider."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.gateway.model import (
        FinishReason,
        Model,
        ModelRequest,
        ModelResponse,
        ModelSettings,
        ReasoningDelta,
        ResponseDone,
        StreamEvent,
        TextDelta,
        ToolCallDelta,
    )
    from harness.gateway.profiles import ModelProfile, resolve_model
    from harness.gateway.scripted import FunctionModel, ScriptedModel
    from harness.gateway.wrappers import (
        ConcurrencyLimitedModel,
        FallbackModel,
        Limiter,
        RetryingModel,
    )

_HOMES = {
    "harness.gateway.model": (
        "FinishReason",
        "Model",
        "ModelRequest",
        "ModelResponse",
        "ModelSettings",
        "ReasoningDelta",
        "ResponseDone",
        "StreamEvent",
        "TextDelta",
        "ToolCallDelta",
    ),
    "harness.gateway.profiles": ("ModelProfile", "resolve_model"),
    "harness.gateway.scripted": ("FunctionModel", "ScriptedModel"),
    "harness.gateway.wrappers": (
        "ConcurrencyLimitedModel",
        "FallbackModel",
        "Limiter",
        "RetryingModel",
    ),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "ConcurrencyLimitedModel",
    "FallbackModel",
    "FinishReason",
    "FunctionModel",
    "Limiter",
    "Model",
    "ModelProfile",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "ReasoningDelta",
    "ResponseDone",
    "RetryingModel",
    "ScriptedModel",
    "StreamEvent",
    "TextDelta",
    "ToolCallDelta",
    "resolve_model",
]


def __getattr__(name: str) -> Any:
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module 'harness.gateway' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
