"""Layer 3, the agent loop: what an agent is and how one run of it proceeds."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.agent.loop import AgentLoop
    from harness.agent.output import OutputSpec
    from harness.agent.spec import DEFAULT_INSTRUCTIONS, AgentSpec
    from harness.agent.strategies import (
        PlanAndExecute,
        ReAct,
        RunControl,
        Strategy,
        register_strategy,
        strategy_names,
    )
    from harness.agent.verify import ShellVerifier, Verifier, VerifyContext, VerifyResult

_HOMES = {
    "harness.agent.loop": ("AgentLoop",),
    "harness.agent.output": ("OutputSpec",),
    "harness.agent.spec": ("DEFAULT_INSTRUCTIONS", "AgentSpec"),
    "harness.agent.strategies": (
        "PlanAndExecute",
        "ReAct",
        "RunControl",
        "Strategy",
        "register_strategy",
        "strategy_names",
    ),
    "harness.agent.verify": ("ShellVerifier", "Verifier", "VerifyContext", "VerifyResult"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "AgentLoop",
    "AgentSpec",
    "OutputSpec",
    "PlanAndExecute",
    "ReAct",
    "RunControl",
    "ShellVerifier",
    "Strategy",
    "Verifier",
    "VerifyContext",
    "VerifyResult",
    "register_strategy",
    "strategy_names",
]


def __getattr__(name: str) -> Any:
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module 'harness.agent' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
