"""What an agent is: a model, instructions, tools and limits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.agent.strategies.base import make_strategy
from harness.core.usage import Limits
from harness.gateway.model import Model, ModelSettings
from harness.tools import ToolSpec
from harness.tools.approvals import ApprovalPolicy
from harness.tools.mcp import MCPServerConfig

__all__ = ["DEFAULT_INSTRUCTIONS", "AgentSpec"]

DEFAULT_INSTRUCTIONS = (
    "You are a careful assistant that solves tasks step by step. Use the tools when they help; "
    "read tool errors and change your approach instead of repeating a failing call. When the "
    "task is done, reply with the final answer and no tool call."
)


@dataclass(frozen=True, kw_only=True, eq=False)
class AgentSpec:
    """The definition of an agent; the same spec can run any number of times.

    Agents compare by identity, so that the runtime can keep per-agent state (such as the
    compiled toolset) for as long as the agent object lives.
    """

    name: str = "agent"
    """A short name, recorded with every run."""
    model: str | Model = "local"
    """A profile name, `openai:MODEL_NAME`, or a `Model` object."""
    base_url: str | None = None
    """Server address for a model given by name; overrides the profile's."""
    instructions: str = DEFAULT_INSTRUCTIONS
    """The system prompt."""
    tools: Sequence[ToolSpec | str] = ()
    """Tools as `ToolSpec`s, or names of built-in tools such as `"bash"`."""
    limits: Limits = field(default_factory=Limits)
    """Bounds on every run of this agent."""
    settings: ModelSettings = field(default_factory=ModelSettings)
    """Sampling settings sent with every model request."""
    workspace: Path | None = None
    """Directory the built-in tools work in; `None` is the current directory."""
    network: bool = False
    """Give the built-in bash tool the host's network; its calls then need approval."""
    allow_unsandboxed: bool = False
    """Let the built-in bash tool run on the host when no sandbox works (each call then
    needs approval). Without it, bash refuses to run unsandboxed."""
    mcp: Sequence[str | MCPServerConfig] = ()
    """MCP servers whose tools the agent gets: names of `[mcp.NAME]` tables in
    `harness.toml`, or configurations."""
    approvals: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    """Which tool calls run on their own, wait for a person, or never run."""
    strategy: str = "react"
    """How a run proceeds: `"react"` (step by step), `"plan_execute"` (a plan first, then
    its steps, revised when one fails), or a name given to `register_strategy`."""
    strategy_options: Mapping[str, Any] = field(default_factory=lambda: {})
    """Keyword arguments for the strategy, JSON-compatible so that the agent can travel
    between processes; e.g. `{"max_revisions": 2}` for `plan_execute`."""

    def __post_init__(self) -> None:
        make_strategy(self.strategy, self.strategy_options)  # a bad name fails here, clearly
