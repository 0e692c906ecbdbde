"""Layer 1, the model gateway: one `Model` interface over every provider."""

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
