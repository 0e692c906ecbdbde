"""The schema of `[agents.NAME]`, `[task_types.NAME]` and `[experiments.NAME]` (pydantic).

Imported only when `harness.toml` exists. Keys are checked here one by one; what needs the
rest of the file (model profiles, MCP servers) or the disk (instruction and schema files) is
checked when the tables become plain data (`harness.runtime.settings`).
"""

from __future__ import annotations

import re
from typing import Any, Literal, Self, cast

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.agent._agent_tool import AGENT_TOOL_PREFIX
from harness.agent.strategies import strategy_names
from harness.core.ids import check_task_type
from harness.core.usage import Limits
from harness.errors import ConfigError
from harness.runtime._agents_config import Overrides
from harness.tools.approvals import ApprovalPolicy, ApprovalRule
from harness.tools.spec import Approval

__all__ = [
    "AgentEntry",
    "ApprovalsEntry",
    "ExperimentEntry",
    "LimitsEntry",
    "TaskTypeEntry",
    "ToolEntry",
    "TriggerEntry",
    "check_labels",
    "flat_tool_tables",
    "flatten_tool_tables",
    "known_strategy",
]

_PYTHON_TOOL = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A tool's name, a tag, or an agent named as a tool (its name becomes the tool's)."""


def _agent_tool_name(entry: str) -> str:
    """The agent an `agent:NAME` tool names; a clear `ValueError` if it is no tool name."""
    name = entry.removeprefix(AGENT_TOOL_PREFIX)
    if not _TOOL_NAME.fullmatch(name):
        raise ValueError(
            f"tool {entry!r}: 'agent:NAME' needs the name of an agent of 1 to 64 letters, "
            "digits, '_' or '-' (it becomes the tool's name)"
        )
    return name


_REGISTRY_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64})?")
_SELECTOR_PREFIXES = ("mcp:", "tag:")


def _check_tool_name(name: str) -> None:
    """A clear `ValueError` if `name` in an agent's `tools` can name nothing."""
    if name.startswith(AGENT_TOOL_PREFIX):
        _agent_tool_name(name)
    elif name.startswith("tag:") and not _TOOL_NAME.fullmatch(name.removeprefix("tag:")):
        raise ValueError(f"tool {name!r}: a tag is 1 to 64 letters, digits, '_' or '-'")
    elif (
        ":" in name and not name.startswith(_SELECTOR_PREFIXES) and not _PYTHON_TOOL.fullmatch(name)
    ):
        raise ValueError(
            f"tool {name!r}: a Python tool is 'package.module:function', an MCP server's "
            "tools are 'mcp:NAME', the tools with a tag 'tag:NAME', an agent 'agent:NAME'"
        )


def known_strategy(name: str | None) -> str | None:
    """`name` if it is a registered strategy (or `None`); a clear `ValueError` if not."""
    if name is not None and name not in strategy_names():
        raise ValueError(f"unknown strategy {name!r}; use one of {', '.join(strategy_names())}")
    return name


def _label(value: str | None) -> str | None:
    try:
        return check_task_type(value)
    except ConfigError as exc:
        raise ValueError(str(exc)) from exc


class LimitsEntry(BaseModel):
    """A `limits` table: the budgets it sets (the others come from the level below)."""

    model_config = ConfigDict(extra="forbid")
    max_steps: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, ge=0)
    max_seconds: float | None = Field(default=None, ge=0)
    max_tool_calls: int | None = Field(default=None, ge=0)

    def values(self) -> dict[str, int | float]:
        """The limits set, by name."""
        return dict(self.model_dump(exclude_none=True))

    def limits(self) -> Limits:
        """`Limits` with the keys this table sets; the others keep their defaults."""
        return Limits(**self.model_dump(exclude_unset=True))


class _RuleEntry(BaseModel):
    """One `[[approvals.rules]]` entry."""

    model_config = ConfigDict(extra="forbid")
    tool: str = "*"
    decision: Approval = "ask"
    when: dict[str, str] = {}
    reason: str | None = None


class ApprovalsEntry(BaseModel):
    """An `[approvals]` table (or an agent's): per-tool decisions and rules on arguments."""

    model_config = ConfigDict(extra="forbid")
    tools: dict[str, Approval] = {}
    rules: list[_RuleEntry] = []

    def policy(self) -> ApprovalPolicy:
        """The table as an `ApprovalPolicy` (a bad rule raises `ConfigError`)."""
        return ApprovalPolicy(
            rules=tuple(ApprovalRule(**rule.model_dump()) for rule in self.rules),
            tools=dict(self.tools),
        )


class AgentEntry(BaseModel):
    """One `[agents.NAME]` table."""

    model_config = ConfigDict(extra="forbid")
    description: str | None = None
    model: str | None = Field(default=None, min_length=1)
    base_url: str | None = Field(default=None, pattern=r"^https?://")
    instructions: str | None = Field(default=None, min_length=1)
    instructions_file: str | None = Field(default=None, min_length=1)
    tools: list[str] = []
    strategy: str | None = None
    strategy_options: dict[str, Any] = {}
    limits: LimitsEntry = LimitsEntry()
    output_schema: str | None = Field(default=None, min_length=1)
    completion_check: str | None = Field(default=None, min_length=1)
    approvals: ApprovalsEntry | None = None
    workspace: str | None = Field(default=None, min_length=1)
    network: bool = False
    allow_unsandboxed: bool = False
    handoffs: list[str] = []

    _known_strategy = field_validator("strategy")(known_strategy)

    @field_validator("handoffs")
    @classmethod
    def _handoff_names(cls, names: list[str]) -> list[str]:
        for index, name in enumerate(names):
            if not name.strip():
                raise ValueError("an empty agent name: name an agent to hand over to")
            if name in names[:index]:
                raise ValueError(f"agent {name!r} is named twice")
        return names

    @field_validator("tools")
    @classmethod
    def _tool_names(cls, names: list[str]) -> list[str]:
        for index, name in enumerate(names):
            if name in names[:index]:
                raise ValueError(f"tool {name!r} is named twice")
            _check_tool_name(name)
        return names

    @model_validator(mode="after")
    def _one_instructions(self) -> Self:
        if self.instructions is not None and self.instructions_file is not None:
            raise ValueError("give 'instructions' or 'instructions_file', not both")
        return self


class ToolEntry(BaseModel):
    """One `[tools.NAME]` table: a tool's concurrency limit and tags, or a Python tool."""

    model_config = ConfigDict(extra="forbid")
    max_concurrent: int | None = Field(default=None, ge=1)
    tags: list[str] = []
    function: str | None = Field(default=None, pattern=rf"^{_PYTHON_TOOL.pattern}$")

    @field_validator("tags")
    @classmethod
    def _tags(cls, tags: list[str]) -> list[str]:
        for tag in tags:
            if not _TOOL_NAME.fullmatch(tag):
                raise ValueError(f"tag {tag!r}: use 1 to 64 letters, digits, '_' or '-'")
        return tags


_TOOL_KEYS = frozenset(ToolEntry.model_fields)


def flatten_tool_tables(tables: dict[str, Any]) -> dict[str, Any]:
    """`[tools]` with `[tools.SERVER.TOOL]` tables as `"SERVER.TOOL"`.

    TOML reads `[tools.github.search_issues]` as a table in a table: a table whose keys
    are all tables (and no key of `ToolEntry`) is a server's.
    """
    flat: dict[str, Any] = {}
    for name, table in tables.items():
        inner = cast(dict[str, Any], table) if isinstance(table, dict) else None
        tables_only = inner and all(isinstance(v, dict) for v in inner.values())
        if inner and tables_only and not _TOOL_KEYS & set(inner):
            flat.update((f"{name}.{tool}", value) for tool, value in inner.items())
        else:
            flat[name] = table
    return flat


def flat_tool_tables(tables: Any) -> Any:
    """`[tools]` flattened (`flatten_tool_tables`), each name checked."""
    if not isinstance(tables, dict):
        return tables
    flat = flatten_tool_tables(cast(dict[str, Any], tables))
    for name, table in flat.items():
        if not _REGISTRY_NAME.fullmatch(name):
            raise ValueError(
                f"[tools.{name}]: a tool is named NAME or SERVER.TOOL (letters, digits, '_' or '-')"
            )
        if "." in name and isinstance(table, dict) and "function" in table:
            raise ValueError(
                f"[tools.{name}]: a Python tool (function = ...) is named without a '.'; "
                "SERVER.TOOL names a tool of an MCP server"
            )
    return flat


class TaskTypeEntry(BaseModel):
    """One `[task_types.NAME]` table."""

    model_config = ConfigDict(extra="forbid")
    description: str | None = None
    agent: str | None = Field(default=None, min_length=1)
    model: str | None = Field(default=None, min_length=1)
    strategy: str | None = None
    limits: LimitsEntry = LimitsEntry()

    _known_strategy = field_validator("strategy")(known_strategy)

    def overrides(self) -> Overrides:
        """What the task type sets over its agent."""
        return Overrides(model=self.model, strategy=self.strategy, limits=self.limits.values())


class VariantEntry(BaseModel):
    """One variant of an experiment: its weight and what it changes."""

    model_config = ConfigDict(extra="forbid")
    weight: float = Field(ge=0)
    model: str | None = Field(default=None, min_length=1)
    strategy: str | None = None
    instructions: str | None = Field(default=None, min_length=1)
    limits: LimitsEntry = LimitsEntry()

    _known_strategy = field_validator("strategy")(known_strategy)

    def overrides(self) -> Overrides:
        """What the variant sets."""
        return Overrides(
            model=self.model,
            strategy=self.strategy,
            instructions=self.instructions,
            limits=self.limits.values(),
        )


class ExperimentEntry(BaseModel):
    """One `[experiments.NAME]` table."""

    model_config = ConfigDict(extra="forbid")
    description: str | None = None
    task_type: str | None = None
    agent: str | None = Field(default=None, min_length=1)
    key: Literal["run_id", "user"] = "run_id"
    variants: dict[str, VariantEntry] = Field(min_length=2)
    keep: str | None = None

    _task_type_label = field_validator("task_type")(_label)

    @field_validator("variants")
    @classmethod
    def _some_weight(cls, variants: dict[str, VariantEntry]) -> dict[str, VariantEntry]:
        if not any(v.weight > 0 for v in variants.values()):
            raise ValueError("every weight is 0: give at least one variant a weight above 0")
        return variants

    @model_validator(mode="after")
    def _target_and_keep(self) -> Self:
        if (self.task_type is None) == (self.agent is None):
            raise ValueError("give exactly one of 'task_type' or 'agent': what it applies to")
        if self.keep is not None and self.keep not in self.variants:
            raise ValueError(
                f"keep = {self.keep!r} is not a variant (variants: {', '.join(self.variants)})"
            )
        return self


class TriggerEntry(BaseModel):
    """One `[[triggers]]` table: start an agent on every matching event (`Harness.on`)."""

    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(default=None, min_length=1)
    on: str = Field(min_length=1)
    match: dict[str, Any] = {}
    start: str = Field(min_length=1)
    task: str = Field(min_length=1)
    task_type: str | None = None
    priority: int = 0
    reentrant: bool = False

    _task_type_label = field_validator("task_type")(_label)


def check_labels(names: dict[str, Any]) -> dict[str, Any]:
    """The tables of `[task_types]`, whose names must be task-type labels."""
    for name in names:
        _label(name)
    return names
