"""`[agents]`, `[task_types]` and `[experiments]` of a validated file, as plain data.

What one table cannot check alone is checked here: models against the profiles, MCP servers
and built-in tools by name, the files an agent names (read now, so that a missing one fails at
start), the agent a task type or an experiment names, one experiment per task type or agent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from harness.agent._agent_tool import AGENT_TOOL_PREFIX
from harness.errors import ConfigError
from harness.gateway.profiles import ModelProfile, resolve_profile
from harness.runtime._agents_config import (
    AgentConfig,
    ExperimentConfig,
    TaskTypeConfig,
    VariantConfig,
)
from harness.runtime._config_agents import AgentEntry, ExperimentEntry
from harness.runtime._config_file import FileConfig
from harness.runtime._trigger_rules import Trigger, make_trigger
from harness.tools.approvals import ApprovalPolicy

__all__ = [
    "Problem",
    "agents_of",
    "experiments_of",
    "pick_tools",
    "server_known",
    "server_of",
    "task_types_of",
    "triggers_of",
]

Problem = Callable[[tuple[str, ...], str], str]
"""Formats a problem with a key: the file (or environment variable) and the key path."""


def agents_of(
    config: FileConfig,
    *,
    home: Path,
    profiles: Mapping[str, ModelProfile],
    mcp_servers: Mapping[str, Any],
    problem: Problem,
) -> dict[str, AgentConfig]:
    """The `[agents.NAME]` tables, checked and with their files read.

    Raises:
        ConfigError: A table names something that does not exist; the message names the key.
    """
    agents: dict[str, AgentConfig] = {}
    for name, entry in config.agents.items():
        where = ("agents", name)
        _check_model(entry.model, profiles, where, problem)
        own = [t for t in entry.tools if not t.startswith(AGENT_TOOL_PREFIX)]
        builtin, mcp, python, picks = _split_tools(own, config, mcp_servers, where, problem)
        if name in entry.handoffs:
            raise ConfigError(
                problem((*where, "handoffs"), f"agent {name!r} cannot hand over to itself")
            )
        agents[name] = AgentConfig(
            name=name,
            description=entry.description,
            model=entry.model,
            base_url=entry.base_url,
            instructions=_instructions(entry, home, where, problem),
            builtin_tools=builtin,
            mcp=mcp,
            python_tools=python,
            agent_tools=tuple(
                t.removeprefix(AGENT_TOOL_PREFIX)
                for t in entry.tools
                if t.startswith(AGENT_TOOL_PREFIX)
            ),
            picks=picks,
            strategy=entry.strategy,
            strategy_options=dict(entry.strategy_options),
            limits=entry.limits.values(),
            output_schema=_schema(entry, home, where, problem),
            completion_check=entry.completion_check,
            approvals=_approvals(entry, where, problem),
            workspace=(home / Path(entry.workspace).expanduser()) if entry.workspace else None,
            network=entry.network,
            allow_unsandboxed=entry.allow_unsandboxed,
            handoffs=tuple(entry.handoffs),
        )
    _check_agent_tools(agents, problem)
    return agents


def _check_agent_tools(agents: Mapping[str, AgentConfig], problem: Problem) -> None:
    """Every `agent:NAME` tool names an agent (of the file or an entry point), in no cycle.

    An agent of an entry point is not looked into: its tools are Python's business.
    """
    from harness.runtime._catalog import entry_point_names

    for name, config in agents.items():
        for target in config.agent_tools:
            if target not in agents and target not in entry_point_names():
                known = ", ".join(sorted(agents)) or "none"
                raise ConfigError(
                    problem(
                        ("agents", name, "tools"),
                        f"'agent:{target}' names no agent (agents of the file: {known}); "
                        f"define [agents.{target}] or register it as an entry point",
                    )
                )
    for name in agents:
        cycle = _cycle_from(name, agents, ())
        if cycle:
            raise ConfigError(
                problem(
                    ("agents", name, "tools"),
                    "agents call each other in a cycle: "
                    + " -> ".join(cycle)
                    + " (each call would start a child run of the next, until max_depth)",
                )
            )


def _cycle_from(
    name: str, agents: Mapping[str, AgentConfig], path: tuple[str, ...]
) -> tuple[str, ...]:
    """The first cycle of agent tools reached from `name` (empty: none)."""
    if name in path:
        return (*path[path.index(name) :], name)
    config = agents.get(name)
    for target in config.agent_tools if config else ():
        cycle = _cycle_from(target, agents, (*path, name))
        if cycle:
            return cycle
    return ()


def task_types_of(
    config: FileConfig,
    *,
    profiles: Mapping[str, ModelProfile],
    agents: Callable[[str], bool],
    problem: Problem,
) -> dict[str, TaskTypeConfig]:
    """The `[task_types.NAME]` tables, checked (`agents` says whether an agent exists)."""
    found: dict[str, TaskTypeConfig] = {}
    for name, entry in config.task_types.items():
        where = ("task_types", name)
        _check_model(entry.model, profiles, where, problem)
        _check_agent(entry.agent, agents, where, problem)
        found[name] = TaskTypeConfig(
            name=name, agent=entry.agent, overrides=entry.overrides(), description=entry.description
        )
    return found


def experiments_of(
    config: FileConfig,
    *,
    profiles: Mapping[str, ModelProfile],
    agents: Callable[[str], bool],
    problem: Problem,
) -> dict[str, ExperimentConfig]:
    """The `[experiments.NAME]` tables, checked; two may not split the same runs."""
    found: dict[str, ExperimentConfig] = {}
    targets: dict[tuple[str, str], str] = {}
    for name, entry in config.experiments.items():
        where = ("experiments", name)
        _check_agent(entry.agent, agents, where, problem)
        target = ("task_type", entry.task_type) if entry.task_type else ("agent", entry.agent or "")
        if target in targets:
            raise ConfigError(
                problem(
                    (*where, target[0]),
                    f"experiment {targets[target]!r} already splits the runs of "
                    f"{target[0].replace('_', ' ')} {target[1]!r}: stop one of them (keep = …) "
                    "or give them different targets",
                )
            )
        targets[target] = name
        found[name] = _experiment(name, entry, profiles, problem)
    return found


def _experiment(
    name: str, entry: ExperimentEntry, profiles: Mapping[str, ModelProfile], problem: Problem
) -> ExperimentConfig:
    variants: list[VariantConfig] = []
    for variant, v in entry.variants.items():
        _check_model(v.model, profiles, ("experiments", name, "variants", variant), problem)
        variants.append(VariantConfig(name=variant, weight=v.weight, overrides=v.overrides()))
    return ExperimentConfig(
        name=name,
        task_type=entry.task_type,
        agent=entry.agent,
        key=entry.key,
        variants=tuple(variants),
        keep=entry.keep,
        description=entry.description,
    )


def _check_model(
    model: str | None,
    profiles: Mapping[str, ModelProfile],
    where: tuple[str, ...],
    problem: Problem,
) -> None:
    if model is None:
        return
    try:
        resolve_profile(model, profiles)
    except ConfigError as exc:
        raise ConfigError(problem((*where, "model"), str(exc))) from exc


def _check_agent(
    agent: str | None, exists: Callable[[str], bool], where: tuple[str, ...], problem: Problem
) -> None:
    if agent is not None and not exists(agent):
        raise ConfigError(
            problem(
                (*where, "agent"),
                f"no agent {agent!r}: define [agents.{agent}] or install a package that "
                "registers it (entry-point group harness.agents)",
            )
        )


def _split_tools(
    tools: list[str],
    config: FileConfig,
    mcp_servers: Mapping[str, Any],
    where: tuple[str, ...],
    problem: Problem,
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Built-in tools, MCP servers, Python tools and registry picks of an agent's `tools`.

    Registry picks are tags, globs, `SERVER.TOOL` names and `[tools.NAME]` tools; what
    needs a server's list of tools is checked when the agent's toolset is built.
    """
    from harness.runtime.registry import is_selector
    from harness.tools.builtin import BUILTIN_TOOLS

    builtin: list[str] = []
    mcp: list[str] = []
    python: list[str] = []
    picks: list[str] = []
    for name in tools:
        server = name.removeprefix("mcp:") if name.startswith("mcp:") else server_of(name)
        if server is not None and not server_known(server, mcp_servers):
            known = ", ".join(sorted(mcp_servers)) or "none"
            raise ConfigError(
                problem(
                    (*where, "tools"),
                    f"no MCP server {server!r} (configured: {known}); add an "
                    f"[mcp.{server}] table with a command or url",
                )
            )
        if name.startswith("mcp:"):
            mcp.append(server or "")
        elif is_selector(name) or server is not None or name in config.tools:
            picks.append(name)
        elif ":" in name:
            python.append(name)
        elif name in BUILTIN_TOOLS:
            builtin.append(name)
        else:
            raise ConfigError(
                problem(
                    (*where, "tools"),
                    f"no built-in tool {name!r} (built-in: {', '.join(sorted(BUILTIN_TOOLS))}) "
                    f"and no [tools.{name}] table; name a Python tool as "
                    "'package.module:function', an MCP server's tools as 'mcp:NAME' or "
                    "'NAME.TOOL', the tools with a tag as 'tag:TAG', several by a glob ('fs_*')",
                )
            )
    return tuple(builtin), tuple(mcp), tuple(python), tuple(picks)


def server_of(name: str) -> str | None:
    """The server part of `SERVER.TOOL` (or of a glob such as `github.*`), if any."""
    if name.startswith("tag:") or ":" in name or "." not in name:
        return None
    return name.split(".")[0]


def server_known(server: str, mcp_servers: Mapping[str, Any]) -> bool:
    """Whether a configured server has the name `server` (or matches it, as a glob)."""
    import fnmatch

    return any(fnmatch.fnmatchcase(name, server) for name in mcp_servers)


def pick_tools(
    names: list[str], python_tools: Mapping[str, Any], mcp_servers: Mapping[str, Any], label: str
) -> list[str]:
    """Check the tools a run is given by name, as an agent's `tools` in harness.toml.

    Built-in tools and `[tools.NAME]` tools by name, `tag:TAG`, a glob, `SERVER.TOOL` of a
    configured `[mcp.SERVER]` (`harness run --tools`, `POST /api/runs`'s `tools`). A tag,
    glob or MCP tool that picks nothing fails when the run is submitted, with the list of
    what exists.

    Raises:
        ConfigError: A name that is no tool, one of an unknown MCP server, or one named
            twice; the message starts with `label`.
    """
    from harness.runtime.registry import is_selector
    from harness.tools.builtin import BUILTIN_TOOLS

    for index, name in enumerate(names):
        server = server_of(name)
        if server is not None and not server_known(server, mcp_servers):
            known = ", ".join(sorted(mcp_servers)) or "none"
            raise ConfigError(
                f"{label}: {name!r} names a tool of MCP server {server!r}, which is not "
                f"configured (configured: {known}); add an [mcp.{server}] table"
            )
        if not (name in BUILTIN_TOOLS or name in python_tools or is_selector(name) or server):
            found = f"built-in: {', '.join(sorted(BUILTIN_TOOLS))}"
            if python_tools:
                found += f"; [tools.NAME]: {', '.join(sorted(python_tools))}"
            raise ConfigError(
                f"{label}: no tool is named {name!r} ({found}; a Python function becomes a "
                "tool by name with a [tools.NAME] table whose function = "
                "'package.module:function')"
            )
        if name in names[:index]:
            raise ConfigError(f"{label}: {name!r} is named twice")
    return names


def _read(path: Path, loc: tuple[str, ...], problem: Problem) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(problem(loc, f"cannot read {path}: {why}")) from exc


def _instructions(
    entry: AgentEntry, home: Path, where: tuple[str, ...], problem: Problem
) -> str | None:
    if entry.instructions_file is None:
        return entry.instructions
    loc = (*where, "instructions_file")
    text = _read(home / Path(entry.instructions_file).expanduser(), loc, problem).strip()
    if not text:
        raise ConfigError(problem(loc, f"{entry.instructions_file} is empty"))
    return text


def _schema(
    entry: AgentEntry, home: Path, where: tuple[str, ...], problem: Problem
) -> dict[str, Any] | None:
    if entry.output_schema is None:
        return None
    loc = (*where, "output_schema")
    path = home / Path(entry.output_schema).expanduser()
    try:
        schema = json.loads(_read(path, loc, problem))
    except json.JSONDecodeError as exc:
        raise ConfigError(problem(loc, f"{path} is not JSON: {exc}")) from exc
    if not isinstance(schema, dict):
        raise ConfigError(problem(loc, f"{path} is not a JSON Schema (an object)"))
    from harness.agent.output import OutputSpec

    try:
        OutputSpec.from_type(cast(dict[str, Any], schema))
    except ConfigError as exc:
        raise ConfigError(problem(loc, f"{path}: {exc}")) from exc
    return cast(dict[str, Any], schema)


def _approvals(
    entry: AgentEntry, where: tuple[str, ...], problem: Problem
) -> ApprovalPolicy | None:
    if entry.approvals is None:
        return None
    try:
        return entry.approvals.policy()
    except ConfigError as exc:
        raise ConfigError(problem((*where, "approvals", "rules"), str(exc))) from exc


def triggers_of(
    config: FileConfig, *, agents: Callable[[str], bool], problem: Problem
) -> tuple[Trigger, ...]:
    """The `[[triggers]]` tables, checked whole: agent, event type, match and template.

    Raises:
        ConfigError: A table names an unknown agent or event type, matches on or fills in
            a field the event does not have, or reuses another trigger's name.
    """
    triggers: dict[str, Trigger] = {}
    for index, entry in enumerate(config.triggers):
        where = ("triggers", str(index))
        if not agents(entry.start):
            raise ConfigError(
                problem(
                    (*where, "start"),
                    f"no agent named {entry.start!r}: define [agents.{entry.start}] "
                    "(or install an entry point of that name)",
                )
            )
        name = entry.name or f"{entry.start}-on-{entry.on}"
        if name in triggers:
            raise ConfigError(problem((*where, "name"), f"two triggers are named {name!r}"))
        try:
            triggers[name] = make_trigger(
                name=name,
                event=entry.on,
                match=entry.match,
                start=entry.start,
                task=entry.task,
                task_type=entry.task_type,
                priority=entry.priority,
                reentrant=entry.reentrant,
            )
        except ConfigError as exc:
            raise ConfigError(problem(where, str(exc))) from exc
    return tuple(triggers.values())
