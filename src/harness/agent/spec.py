"""What an agent is: a model, instructions, tools and limits."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.core.usage import Limits
from harness.errors import ConfigError
from harness.gateway.model import Model, ModelSettings
from harness.gateway.profiled import find_profile
from harness.memory import ContextPolicy
from harness.tools import ToolSpec
from harness.tools.approvals import ApprovalPolicy

if TYPE_CHECKING:
    from pathlib import Path

    from harness.agent.output import OutputSpec
    from harness.agent.verify import Verifier
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
    description: str = ""
    """What the agent is for, in a line: the description of the tool that hands a
    conversation over to it (`handoffs`)."""
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

    output_type: type[Any] | Mapping[str, Any] | None = None
    """The type of the final answer: a pydantic model (or any type pydantic validates) or a
    JSON Schema. The answer is then read as JSON, validated and, when it does not match,
    sent back for repair (twice at most); the result's `data` holds the value."""
    verifier: Verifier | str | None = None
    """A completion check run when the model gives its final answer: a callable, or a
    shell command (exit code 0 passes) run in the workspace, sandboxed like `bash`. When
    it fails, the model is told why and the run goes on, within the same limits."""
    handoffs: Sequence[str | AgentSpec] = ()
    """Agents this one may hand the conversation over to, by name or as agents: each one
    becomes a tool, `transfer_to_NAME`, and a call of it continues the run under that agent
    with the conversation so far (`harness.agent.handoff`)."""
    context: ContextPolicy | Mapping[str, Any] | None = None
    """How the conversation is kept within the model's context window: a `ContextPolicy`,
    or fields of one over the model profile's (`{"trim_at": 0.7, "keep_last_turns": 6}`;
    with `context_window` for a model without a profile). `None`: the profile's policy,
    none when its context window is unknown (then everything is sent)."""

    def __post_init__(self) -> None:
        from harness.agent.strategies.base import make_strategy

        make_strategy(self.strategy, self.strategy_options)  # a bad name fails here, clearly
        _ = self.output_spec  # so does an output type that is not one
        if isinstance(self.context, Mapping):
            _check_context(self.context)
        if isinstance(self.verifier, str) and not self.verifier.strip():
            raise ConfigError("verifier is an empty command: give a shell command, or None")
        if self.handoffs:
            from harness.agent.handoff import check_handoffs

            check_handoffs(self.name, self.handoffs)

    @functools.cached_property
    def output_spec(self) -> OutputSpec | None:
        """The output type as an `OutputSpec`, or `None` when the agent declares none."""
        if self.output_type is None:
            return None
        from harness.agent.output import OutputSpec

        return OutputSpec.from_type(self.output_type)

    @property
    def system_prompt(self) -> str:
        """The system message of a new run: the instructions, then the output type's.

        With an output type, the lines of `OutputSpec.instructions` say how the final
        answer must look; they are part of the stored first message, so replay shows
        exactly what the model was told.
        """
        spec = self.output_spec
        return (
            self.instructions if spec is None else f"{self.instructions}\n\n{spec.instructions()}"
        )

    def as_tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
    ) -> ToolSpec:
        """This agent as a tool of another: each call runs it as a child run of the caller.

        The model gives a `task`; the call starts a child run in the same store
        (`parent_run_id`, `root_run_id`, `depth`), waits for it, and answers with its
        result (its structured output as JSON when the agent has an output type). The
        child's usage rolls up into the caller's; cancelling or pausing the caller reaches
        the child. See `harness.runtime.children`.

        Args:
            name: The tool's name; the agent's name by default.
            description: What the model is told about the tool.
            timeout: Seconds a call waits for its child (an hour by default).

        Returns:
            The tool (`side_effects="idempotent"`: a call made again after a takeover
            finds the child it started, so no child runs twice).
        """
        from harness.agent._agent_tool import agent_tool

        return agent_tool(self, name=name, description=description, timeout=timeout)

    def context_policy(self, model: Model) -> ContextPolicy | None:
        """The context policy for runs on `model` (see `context`).

        Raises:
            ConfigError: The thresholds are out of order or range.
        """
        if isinstance(self.context, ContextPolicy):
            return self.context
        overrides = dict(self.context or {})
        window: int | None = overrides.pop("context_window", None)
        profile = find_profile(model)
        if profile is not None and (window or profile.context_window):
            if window:
                profile = dataclasses.replace(profile, context_window=window)
            return ContextPolicy.for_profile(profile, **overrides)
        return None if window is None else ContextPolicy(context_window=window, **overrides)


_CONTEXT_FIELDS = frozenset(f.name for f in dataclasses.fields(ContextPolicy))


def _check_context(context: Mapping[str, Any]) -> None:
    unknown = sorted(set(context) - _CONTEXT_FIELDS)
    if unknown:
        raise ConfigError(
            f"unknown context setting(s) {', '.join(map(repr, unknown))}: use fields of "
            f"ContextPolicy ({', '.join(sorted(_CONTEXT_FIELDS))})"
        )
    if "context_window" in context:
        ContextPolicy(**context)  # out-of-range values fail here, with their names
