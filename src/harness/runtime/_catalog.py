"""Which agent runs a run: agents by name, and the levels of configuration laid over them.

An agent is found by name, first among those registered in Python (`Harness(agents=…)`,
`register`, `submit`), then in `[agents.NAME]` of `harness.toml`, then among the
`harness.agents` entry points of installed packages, so that a worker on another machine
finds them. The agent a run executes is that agent with the levels above it laid over
(`harness.runtime._agents_config`): the run's task type, its experiment variant and the
caller's explicit arguments, all kept on the run's row, so that any process rebuilds the
same agent. A run of an agent no process knows by name brings it in its metadata when it
can travel (`agent_metadata`).

A run handed over to another agent (`harness.agent.handoff`) names that agent in its row,
and its metadata counts the handoffs: it executes that agent as defined, without the levels
chosen for the agent it was submitted to. Agents given as objects in an agent's `handoffs`
are registered with it.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast
from weakref import WeakKeyDictionary

from harness.agent.handoff import HandoffTools
from harness.agent.spec import DEFAULT_INSTRUCTIONS, AgentSpec
from harness.errors import ConfigError
from harness.runtime._agents_config import (
    AgentConfig,
    ExperimentConfig,
    Layer,
    Overrides,
    apply_layers,
    limits_over,
    overrides_of,
)
from harness.runtime.runs import agent_from_metadata
from harness.runtime.settings import CONFIG_FILE, Settings
from harness.store.protocol import RunRecord
from harness.tools.spec import ToolSpec

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["ENTRY_POINT_GROUP", "HANDOFFS_KEY", "AgentCatalog", "entry_point_names"]

ENTRY_POINT_GROUP = "harness.agents"
"""Installed packages register agents under this entry-point group: `name = "pkg.mod:agent"`,
an `AgentSpec` (or a function without arguments that returns one) whose name is `name`."""

HANDOFFS_KEY = "handoffs"
"""The key of a run's metadata that counts its handoffs (`harness.runtime._handoffs`)."""

_CacheKey = tuple[str, str | None, str | None, str | None, str | None]


@functools.cache
def _entry_points() -> dict[str, EntryPoint]:
    from importlib import metadata  # only when a name is not registered in Python

    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def entry_point_names() -> frozenset[str]:
    """The agent names installed packages register (read once per process)."""
    return frozenset(_entry_points())


class AgentCatalog:
    """The agents a `Harness` can execute, by name, and the agent of each run.

    Args:
        settings: The configuration: file agents, task types, experiments.
        agents: Agents registered in Python.
    """

    def __init__(self, settings: Settings, agents: Sequence[AgentSpec] = ()) -> None:
        self._settings = settings
        self._registered: dict[str, AgentSpec] = {}
        self._built: dict[str, AgentSpec] = {}
        self._handoff_tools: WeakKeyDictionary[AgentSpec, HandoffTools] = WeakKeyDictionary()
        self._effective: dict[_CacheKey, tuple[AgentSpec, AgentSpec]] = {}
        self._layered = bool(settings.task_types or settings.experiments)
        for agent in agents:
            self.register(agent)

    def register(self, agent: AgentSpec) -> None:
        """Let runs of `agent` (matched by name) execute here.

        So may runs of the agents it hands over to that it gives as objects (unless an
        agent of that name is registered already).
        """
        self._registered[agent.name] = agent
        if agent.handoffs:
            self._register_targets(agent)

    def _register_targets(self, agent: AgentSpec) -> None:
        waiting = [t for t in agent.handoffs if isinstance(t, AgentSpec)]
        while waiting:
            target = waiting.pop()
            if target.name not in self._registered:
                self._registered[target.name] = target
                waiting += [t for t in target.handoffs if isinstance(t, AgentSpec)]

    def describe(self, name: str) -> str:
        """One line about the agent called `name`; `""` when it has none or is unknown."""
        config = self._settings.agents.get(name)
        if config is not None and name not in self._registered:
            return config.description or ""
        try:
            agent = self.get(name)
        except ConfigError:
            return ""
        return agent.description if agent is not None else ""

    def handoff_tools(self, agent: AgentSpec) -> HandoffTools | None:
        """The tools that hand over from `agent`, built once per agent object."""
        if not agent.handoffs:
            return None
        tools = self._handoff_tools.get(agent)
        if tools is None:
            tools = self._handoff_tools[agent] = HandoffTools(agent, self.describe)
        return tools

    def get(self, name: str) -> AgentSpec | None:
        """The agent called `name`: registered, from the file, or from an entry point.

        Raises:
            ConfigError: The file's agent or the entry point cannot be built (a Python tool
                that does not import …).
        """
        agent = self._registered.get(name) or self._built.get(name)
        if agent is None:
            config = self._settings.agents.get(name)
            if config is not None:
                agent = self._built[name] = build_agent(config, self._settings)
            elif name in _entry_points():
                agent = self._built[name] = _load_entry_point(_entry_points()[name])
        return agent

    def base_for(self, agent: AgentSpec | str | None, task_type: str | None) -> AgentSpec:
        """The agent a caller means: the one given, the one named, or the task type's.

        Raises:
            ConfigError: No agent has that name, or neither an agent nor a task type with
                an agent is given.
        """
        if isinstance(agent, AgentSpec):
            return agent
        if agent is None:
            kind = self._settings.task_types.get(task_type or "")
            if kind is None or kind.agent is None:
                raise ConfigError(
                    "no agent given: pass an agent or its name, or a task type whose "
                    f"[task_types.NAME] table names an agent in {CONFIG_FILE}"
                )
            agent = kind.agent
        found = self.get(agent)
        if found is None:
            raise ConfigError(self._unknown(agent))
        return found

    def experiment_for(self, agent: str, task_type: str | None) -> ExperimentConfig | None:
        """The experiment that splits runs of `task_type`, else of `agent`, if any."""
        if not self._settings.experiments:
            return None
        by_type = by_agent = None
        for experiment in self._settings.experiments.values():
            if task_type is not None and experiment.task_type == task_type:
                by_type = experiment
            elif experiment.agent == agent:
                by_agent = experiment
        return by_type or by_agent

    def layers(
        self,
        task_type: str | None,
        variant: tuple[str, str] | None,
        overrides: Overrides | None,
    ) -> list[Layer]:
        """The levels above the agent for a run (lowest first)."""
        found: list[Layer] = []
        if self._layered:
            kind = self._settings.task_types.get(task_type or "")
            if kind is not None:
                found.append(kind.layer())
            experiment = self._settings.experiments.get(variant[0]) if variant else None
            layer = experiment.layer(variant[1]) if experiment and variant else None
            if layer is not None:
                found.append(layer)
        if overrides is not None:
            found.append(Layer(source="argument", overrides=overrides))
        return found

    def effective(
        self,
        base: AgentSpec,
        *,
        task_type: str | None,
        variant: tuple[str, str] | None,
        overrides: Overrides | None,
    ) -> AgentSpec:
        """`base` with the levels above it; the same object for the same run labels."""
        layers = self.layers(task_type, variant, overrides)
        if not layers:
            return base
        experiment, name = variant or (None, None)
        given = None if overrides is None else repr(overrides.to_dict())
        key: _CacheKey = (base.name, task_type, experiment, name, given)
        cached = self._effective.get(key)
        if cached is not None and cached[0] is base:
            return cached[1]
        agent = apply_layers(base, layers)
        self._effective[key] = (base, agent)
        return agent

    def for_run(self, record: RunRecord) -> AgentSpec | None:
        """The agent that executes `record`: by name with its levels, or from its metadata."""
        base = self.get(record.agent)
        if base is None:
            data = record.metadata.get("agent")
            return agent_from_metadata(cast(Mapping[str, Any], data)) if data else None
        if record.metadata.get(HANDOFFS_KEY):  # handed over: the target as it is defined
            return base
        return self.effective(
            base,
            task_type=record.task_type,
            variant=(record.experiment, record.variant)
            if record.experiment and record.variant
            else None,
            overrides=overrides_of(record.metadata),
        )

    def known(self, record: RunRecord) -> bool:
        """Whether this process can execute `record` (an agent it can build fails it later)."""
        if record.agent in self._registered or record.metadata.get("agent"):
            return True
        return record.agent in self._settings.agents or record.agent in _entry_points()

    def _unknown(self, name: str) -> str:
        known = sorted({*self._registered, *self._settings.agents, *_entry_points()})
        return (
            f"no agent named {name!r} (known: {', '.join(known) or 'none'}): define "
            f"[agents.{name}] in {self._settings.home / CONFIG_FILE} or register it in Python"
        )


def build_agent(config: AgentConfig, settings: Settings) -> AgentSpec:
    """The `AgentSpec` of a file's agent, with `[defaults]` under it.

    Raises:
        ConfigError: A Python tool cannot be imported, or is not a tool.
    """
    where = f"{settings.source_of(('agents', config.name, 'tools'))}: key 'agents.{config.name}"
    tools: list[ToolSpec | str] = [*config.builtin_tools, *config.picks]
    tools += [_python_tool(ref, f"{where}.tools'") for ref in config.python_tools]
    tools += [_agent_tool(name, settings) for name in config.agent_tools]
    return AgentSpec(
        name=config.name,
        description=config.description or "",
        model=config.model or settings.default_model,
        base_url=config.base_url,
        instructions=config.instructions or DEFAULT_INSTRUCTIONS,
        tools=tuple(tools),
        limits=limits_over(settings.default_limits, config.limits),
        workspace=config.workspace,
        network=config.network,
        allow_unsandboxed=config.allow_unsandboxed,
        mcp=config.mcp,
        approvals=config.approvals or settings.approvals,
        strategy=config.strategy or settings.default_strategy,
        strategy_options=config.strategy_options,
        output_type=config.output_schema,
        verifier=config.completion_check,
        handoffs=config.handoffs,
    )


def _python_tool(ref: str, where: str) -> ToolSpec:
    module_name, _, attribute = ref.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"{where}: cannot import {module_name!r} for tool {ref!r}: {exc}"
        ) from exc
    found: Any = getattr(module, attribute, None)
    if isinstance(found, ToolSpec):
        return found
    if callable(found):
        from harness.tools import tool

        return tool(found)
    raise ConfigError(f"{where}: {module_name} has no function {attribute!r} for tool {ref!r}")


def _agent_tool(name: str, settings: Settings) -> ToolSpec:
    """`agent:NAME`: the agent, by name, as a tool (it is built when a call runs it)."""
    from harness.agent._agent_tool import agent_tool

    target = settings.agents.get(name)
    return agent_tool(name, description=target.description if target else None)


def _load_entry_point(entry: EntryPoint) -> AgentSpec:
    where = f"entry point {entry.name!r} ({entry.value}) of group {ENTRY_POINT_GROUP}"
    try:
        found: Any = entry.load()
    except Exception as exc:
        raise ConfigError(f"{where}: cannot be loaded: {exc}") from exc
    if not isinstance(found, AgentSpec) and callable(found):
        found = _call(found)
    if not isinstance(found, AgentSpec):
        raise ConfigError(f"{where}: is not an AgentSpec (or a function returning one)")
    if found.name != entry.name:
        raise ConfigError(f"{where}: the agent is named {found.name!r}, not {entry.name!r}")
    return found


def _call(factory: Callable[[], Any]) -> Any:
    return factory()
