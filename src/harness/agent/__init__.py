"""Layer 3, the agent loop: what an agent is and how one run of it proceeds."""

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
