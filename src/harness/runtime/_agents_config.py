"""Agents, task types and experiments of `harness.toml`, as plain data, and their precedence.

One value of a run's agent can be set at up to five levels; the higher level wins, key by
key (each limit is a key of its own)::

    explicit argument   submit(..., overrides=Overrides(...)), harness run --model/--max-steps
    experiment variant  [experiments.NAME] variants.V (when the run was assigned V)
    task type           [task_types.NAME]
    agent               [agents.NAME], or the fields of a Python AgentSpec
    defaults            [defaults] (then the built-in defaults)

Only model, strategy, instructions and limits have levels above the agent; everything else
(tools, output schema, completion check, approvals …) is the agent's own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, cast

from harness.agent.spec import AgentSpec
from harness.core.usage import Limits
from harness.tools.approvals import ApprovalPolicy

__all__ = [
    "LAYERED_KEYS",
    "LIMIT_KEYS",
    "AgentConfig",
    "ExperimentConfig",
    "Layer",
    "Overrides",
    "TaskTypeConfig",
    "VariantConfig",
    "apply_layers",
    "overrides_of",
]

LIMIT_KEYS: Final = ("max_steps", "max_tokens", "max_cost_usd", "max_seconds", "max_tool_calls")
"""The limits a file may set; each one is a key of its own in the precedence."""
LAYERED_KEYS: Final = ("model", "strategy", "instructions", *(f"limits.{k}" for k in LIMIT_KEYS))
"""The keys that levels above the agent may set, flat (`limits.max_steps`)."""


def _nothing() -> dict[str, Any]:
    return {}


@dataclass(frozen=True, kw_only=True, slots=True)
class Overrides:
    """Values one level sets over the levels below it; `None` (or a missing limit) sets none."""

    model: str | None = None
    """A profile name, `openai:MODEL` or `anthropic:MODEL`."""
    strategy: str | None = None
    """A strategy name (`react`, `plan_execute` …)."""
    instructions: str | None = None
    """The system prompt."""
    limits: Mapping[str, int | float] = field(default_factory=_nothing)
    """Some of `LIMIT_KEYS`, each over the same limit below."""

    def flat(self) -> dict[str, Any]:
        """The values set, by flat key (`model`, `limits.max_steps` …)."""
        values: dict[str, Any] = {
            key: value
            for key, value in (
                ("model", self.model),
                ("strategy", self.strategy),
                ("instructions", self.instructions),
            )
            if value is not None
        }
        values.update({f"limits.{key}": value for key, value in self.limits.items()})
        return values

    def to_dict(self) -> dict[str, Any]:
        """The values set, JSON-compatible (kept with a run for processes that rebuild it)."""
        data: dict[str, Any] = {
            k: v for k, v in dataclasses.asdict(self).items() if v is not None and k != "limits"
        }
        if self.limits:
            data["limits"] = dict(self.limits)
        return data

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> Overrides:
        """The overrides `to_dict` wrote."""
        return Overrides(
            model=data.get("model"),
            strategy=data.get("strategy"),
            instructions=data.get("instructions"),
            limits=dict(data.get("limits") or {}),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class Layer:
    """One level of the precedence: what it sets, and its name for `harness config show`."""

    source: str
    """Where the values come from, e.g. `task_types.refund`."""
    overrides: Overrides
    """The values it sets."""
    loc: tuple[str, ...] = ()
    """Its table in the file, e.g. `("task_types", "refund")`; `()` for none."""


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentConfig:
    """One `[agents.NAME]` table, checked, with its files read."""

    name: str
    """The agent's name (the table's)."""
    description: str | None = None
    """One line for `harness agents list`."""
    model: str | None = None
    """Its model; `None`: `[defaults] model`."""
    base_url: str | None = None
    """The server of a model given by name, over the profile's."""
    instructions: str | None = None
    """Its system prompt (from `instructions` or the `instructions_file`); `None`: the default."""
    builtin_tools: tuple[str, ...] = ()
    """Built-in tools by name (`bash`, `read_file` …)."""
    mcp: tuple[str, ...] = ()
    """`[mcp.NAME]` servers whose tools it gets (`mcp:NAME` in `tools`)."""
    python_tools: tuple[str, ...] = ()
    """Python tools as `package.module:function`, imported when the agent is first built."""
    agent_tools: tuple[str, ...] = ()
    """Agents it calls as tools (`agent:NAME` in `tools`): each call runs one as a child run."""
    picks: tuple[str, ...] = ()
    """Tools of the registry by name (`lookup`, `github.search_issues`), tag (`tag:db`) or
    glob (`fs_*`), picked when its toolset is built."""
    strategy: str | None = None
    """Its strategy; `None`: `[defaults] strategy`."""
    strategy_options: Mapping[str, Any] = field(default_factory=_nothing)
    """Keyword arguments of the strategy."""
    limits: Mapping[str, int | float] = field(default_factory=_nothing)
    """The limits it sets; the others come from `[defaults] limits`."""
    output_schema: Mapping[str, Any] | None = None
    """The JSON Schema of its final answer (read from `output_schema`)."""
    completion_check: str | None = None
    """A shell command that must pass (exit 0) before an answer is final."""
    approvals: ApprovalPolicy | None = None
    """Its approval policy; `None`: the file's `[approvals]`."""
    workspace: Path | None = None
    """The directory its built-in tools work in."""
    network: bool = False
    """Give its bash tool the network (each call then needs approval)."""
    allow_unsandboxed: bool = False
    """Let its bash tool run on the host when no sandbox works (each call needs approval)."""
    handoffs: tuple[str, ...] = ()
    """Agents it may hand the conversation over to, by name (`transfer_to_NAME` tools)."""

    @property
    def tools(self) -> tuple[str, ...]:
        """Its tools as the file names them."""
        return (
            *self.builtin_tools,
            *self.picks,
            *(f"mcp:{m}" for m in self.mcp),
            *self.python_tools,
            *(f"agent:{a}" for a in self.agent_tools),
        )

    def layer(self) -> Layer:
        """The agent's level of the precedence."""
        overrides = Overrides(
            model=self.model,
            strategy=self.strategy,
            instructions=self.instructions,
            limits=self.limits,
        )
        return Layer(source=f"agents.{self.name}", overrides=overrides, loc=("agents", self.name))


@dataclass(frozen=True, kw_only=True, slots=True)
class TaskTypeConfig:
    """One `[task_types.NAME]` table."""

    name: str
    """The task type (a label, as `submit(task_type=...)` takes)."""
    agent: str | None = None
    """The agent for this kind of task, when the caller names none."""
    overrides: Overrides = field(default_factory=Overrides)
    """Model, strategy and limits for this kind of task."""
    description: str | None = None
    """One line for `harness config show`."""

    def layer(self) -> Layer:
        """The task type's level of the precedence."""
        return Layer(
            source=f"task_types.{self.name}",
            overrides=self.overrides,
            loc=("task_types", self.name),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class VariantConfig:
    """One variant of an experiment."""

    name: str
    """Its name, e.g. `a`."""
    weight: float
    """Its share of the traffic, relative to the other variants' weights."""
    overrides: Overrides = field(default_factory=Overrides)
    """What it changes: model, strategy, instructions, limits."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ExperimentConfig:
    """One `[experiments.NAME]` table: an A/B split of a task type's or an agent's runs."""

    name: str
    """The experiment's name."""
    task_type: str | None = None
    """It applies to runs of this task type …"""
    agent: str | None = None
    """… or to runs of this agent (a task type's experiment wins when both match)."""
    key: Literal["run_id", "user"] = "run_id"
    """What assigns a variant: the run id, or the caller's `experiment_key` (a user id …)."""
    variants: tuple[VariantConfig, ...] = ()
    """The variants, in the file's order."""
    keep: str | None = None
    """Stopped in the file: every run gets this variant."""
    description: str | None = None
    """One line for `harness experiments list`."""

    def variant(self, name: str) -> VariantConfig | None:
        """The variant called `name`, if there is one."""
        return next((v for v in self.variants if v.name == name), None)

    def layer(self, variant: str) -> Layer | None:
        """The variant's level of the precedence (`None` for a variant the file lacks)."""
        found = self.variant(variant)
        if found is None:
            return None
        return Layer(
            source=f"experiments.{self.name}.variants.{variant}", overrides=found.overrides
        )


def apply_layers(spec: AgentSpec, layers: Sequence[Layer]) -> AgentSpec:
    """`spec` with what `layers` set (the last layer wins), or `spec` itself when nothing is."""
    values: dict[str, Any] = {}
    for layer in layers:
        values.update(layer.overrides.flat())
    if not values:
        return spec
    limits = {k.removeprefix("limits."): v for k, v in values.items() if k.startswith("limits.")}
    changes = {k: v for k, v in values.items() if not k.startswith("limits.")}
    if limits:
        changes["limits"] = dataclasses.replace(spec.limits, **limits)
    return dataclasses.replace(spec, **changes)


def limits_over(base: Limits, limits: Mapping[str, int | float]) -> Limits:
    """`base` with `limits` over it."""
    return dataclasses.replace(base, **limits) if limits else base


def overrides_of(metadata: Mapping[str, Any]) -> Overrides | None:
    """The explicit overrides kept in a run's metadata (`submit(overrides=...)`), if any."""
    given = metadata.get("overrides")
    return Overrides.from_dict(cast(Mapping[str, Any], given)) if isinstance(given, dict) else None
