"""Layer 3, the agent loop: what an agent is and how one run of it proceeds."""

from harness.agent.loop import AgentLoop
from harness.agent.spec import DEFAULT_INSTRUCTIONS, AgentSpec
from harness.agent.strategies import (
    PlanAndExecute,
    ReAct,
    RunControl,
    Strategy,
    register_strategy,
    strategy_names,
)

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "AgentLoop",
    "AgentSpec",
    "PlanAndExecute",
    "ReAct",
    "RunControl",
    "Strategy",
    "register_strategy",
    "strategy_names",
]
