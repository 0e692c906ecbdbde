"""Strategies: how a run proceeds. `react` (the default) and `plan_execute` are built in.

A third strategy is one module with a class that has an async `run(run: RunControl)`
method, and one call: `register_strategy("name", TheClass)`. Agents then choose it with
`strategy="name"` (options as `strategy_options`), or `[defaults] strategy` in
`harness.toml` for agents run from the command line.
"""

from harness.agent.strategies.base import (
    Answer,
    Outcome,
    RunControl,
    Strategy,
    StrategyFactory,
    Turn,
    make_strategy,
    register_strategy,
    strategy_names,
)
from harness.agent.strategies.plan_execute import PlanAndExecute
from harness.agent.strategies.react import ReAct

register_strategy("react", ReAct, replace=True)
register_strategy("plan_execute", PlanAndExecute, replace=True)

__all__ = [
    "Answer",
    "Outcome",
    "PlanAndExecute",
    "ReAct",
    "RunControl",
    "Strategy",
    "StrategyFactory",
    "Turn",
    "make_strategy",
    "register_strategy",
    "strategy_names",
]
