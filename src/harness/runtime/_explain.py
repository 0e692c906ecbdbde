"""`harness config show`: each effective value of an agent's runs, and where it came from."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.agent.spec import DEFAULT_INSTRUCTIONS
from harness.core.usage import Limits
from harness.errors import ConfigError
from harness.gateway.profiles import DEFAULT_PROFILE
from harness.runtime._agents_config import LIMIT_KEYS, Layer, Overrides
from harness.runtime._catalog import AgentCatalog, entry_point_names
from harness.runtime.runtime_settings import API_KEY_ENV
from harness.runtime.settings import Settings

__all__ = ["Setting", "explain"]

_BUILT_IN = "built-in default"


@dataclass(frozen=True, kw_only=True, slots=True)
class Setting:
    """One effective value and its source."""

    key: str
    """The key, flat (`model`, `limits.max_steps`, `tools` …)."""
    value: Any
    """Its value (JSON-compatible)."""
    source: str
    """Where it came from: a key of the file, an environment variable, a flag, or
    `built-in default`."""


def explain(
    settings: Settings,
    *,
    agent: str | None = None,
    task_type: str | None = None,
    overrides: Overrides | None = None,
    flags: Mapping[str, str] | None = None,
) -> list[Setting]:
    """The effective values of a run of `agent` (or of `task_type`'s agent), with sources.

    `overrides` are the explicit values; `flags` name the flag of each of their keys.

    Raises:
        ConfigError: No agent has the name given, or the task type's agent is unknown.
    """
    found: dict[str, Setting] = {}
    name, named_by = _agent_name(settings, agent, task_type)
    if name is not None:
        found["agent"] = Setting(key="agent", value=name, source=named_by)
    for key, value in _built_in().items():
        found[key] = Setting(key=key, value=value, source=_BUILT_IN)
    found.update(_defaults(settings))
    catalog = AgentCatalog(settings)
    layers: list[Layer] = []
    if name is not None:
        layers.append(_agent_layer(settings, catalog, name))
    kind = settings.task_types.get(task_type or "")
    if kind is not None:
        layers.append(kind.layer())
    for layer in layers:
        found.update(_from_layer(settings, layer))
    if overrides is not None:
        names = flags or {}
        for key, value in overrides.flat().items():
            found[key] = Setting(key=key, value=value, source=names.get(key, "argument"))
    if name is not None:
        found.update(_agent_own(settings, catalog, name))
    experiment = catalog.experiment_for(name or "", task_type)
    if experiment is not None:
        found["experiment"] = Setting(
            key="experiment",
            value=experiment.name,
            source=f"experiments.{experiment.name}",
        )
    found.update(_runtime(settings))
    return list(found.values())


_TEMPORAL_KEYS = (
    "temporal_address",
    "namespace",
    "task_queue",
    "temporal_tls",
    "temporal_tls_ca",
    "temporal_tls_cert",
    "temporal_tls_key",
    "temporal_tls_domain",
    "temporal_history_events",
)


def _runtime(settings: Settings) -> dict[str, Setting]:
    """`[runtime]`: the engine the runs go to; where Temporal is, when they go there.

    The API key shows as set or not, with its variable, never as its value.
    """
    runtime = settings.runtime
    shown = (
        "backend",
        *(k for k in _TEMPORAL_KEYS if runtime.temporal or k in settings.runtime_set),
    )
    found: dict[str, Setting] = {}
    for key in shown:
        loc = ("runtime", key)
        source = _source(settings, loc) if key in settings.runtime_set else _BUILT_IN
        found[".".join(loc)] = Setting(
            key=".".join(loc), value=getattr(runtime, key), source=source
        )
    if runtime.temporal:
        key = "runtime.temporal_api_key"
        given = runtime.temporal_api_key is not None
        found[key] = Setting(
            key=key,
            value="(set, hidden)" if given else None,
            source=API_KEY_ENV if given else f"{API_KEY_ENV} (unset)",
        )
    return found


def _agent_name(
    settings: Settings, agent: str | None, task_type: str | None
) -> tuple[str | None, str]:
    if agent is not None:
        if agent not in settings.agents and agent not in entry_point_names():
            known = ", ".join(sorted({*settings.agents, *entry_point_names()})) or "none"
            raise ConfigError(f"--agent: no agent named {agent!r} (known: {known})")
        return agent, "--agent"
    kind = settings.task_types.get(task_type or "")
    if kind is not None and kind.agent is not None:
        return kind.agent, _source(settings, ("task_types", kind.name, "agent"))
    return None, ""


def _built_in() -> dict[str, Any]:
    limits = Limits()
    return {
        "model": DEFAULT_PROFILE,
        "strategy": "react",
        "instructions": DEFAULT_INSTRUCTIONS,
        **{f"limits.{k}": getattr(limits, k) for k in LIMIT_KEYS},
    }


def _defaults(settings: Settings) -> dict[str, Setting]:
    values: dict[str, Any] = {
        "model": settings.default_model,
        "strategy": settings.default_strategy,
        **{f"limits.{k}": getattr(settings.default_limits, k) for k in LIMIT_KEYS},
    }
    found = {
        key: Setting(key=key, value=value, source=_source(settings, ("defaults", *key.split("."))))
        for key, value in values.items()
        if key in settings.defaults_set
    }
    if os.environ.get("HARNESS_MODEL"):
        found["model"] = Setting(key="model", value=settings.default_model, source="HARNESS_MODEL")
    return found


def _agent_layer(settings: Settings, catalog: AgentCatalog, name: str) -> Layer:
    config = settings.agents.get(name)
    if config is not None:
        return config.layer()
    spec = catalog.get(name)
    assert spec is not None
    limits = {k: getattr(spec.limits, k) for k in LIMIT_KEYS}
    model = spec.model if isinstance(spec.model, str) else spec.model.name
    overrides = Overrides(
        model=model, strategy=spec.strategy, instructions=spec.instructions, limits=limits
    )
    return Layer(source=f"entry point {name}", overrides=overrides)


def _from_layer(settings: Settings, layer: Layer) -> dict[str, Setting]:
    found: dict[str, Setting] = {}
    for key, value in layer.overrides.flat().items():
        source = _source(settings, (*layer.loc, *key.split("."))) if layer.loc else layer.source
        found[key] = Setting(key=key, value=value, source=source)
    return found


def _agent_own(settings: Settings, catalog: AgentCatalog, name: str) -> dict[str, Setting]:
    """What only the agent sets: tools, output schema, completion check, approvals, handoffs."""
    config = settings.agents.get(name)
    if config is None:
        spec = catalog.get(name)
        assert spec is not None
        tools = [t if isinstance(t, str) else t.name for t in spec.tools]
        return {"tools": Setting(key="tools", value=tools, source=f"entry point {name}")}
    values: dict[str, Any] = {
        "tools": list(config.tools),
        "output_schema": None if config.output_schema is None else dict(config.output_schema),
        "completion_check": config.completion_check,
        "approvals": None
        if config.approvals is None
        else {"tools": dict(config.approvals.tools), "rules": len(config.approvals.rules)},
        "workspace": None if config.workspace is None else str(config.workspace),
        "strategy_options": dict(config.strategy_options) or None,
        "handoffs": list(config.handoffs) or None,
    }
    found: dict[str, Setting] = {}
    for key, value in values.items():
        if value is None:
            continue
        loc = ("agents", name, key)
        found[key] = Setting(key=key, value=value, source=_source(settings, loc))
    if config.approvals is None and (settings.approvals.tools or settings.approvals.rules):
        policy = settings.approvals
        value = {"tools": dict(policy.tools), "rules": len(policy.rules)}
        found["approvals"] = Setting(key="approvals", value=value, source="approvals")
    return found


def _source(settings: Settings, loc: tuple[str, ...]) -> str:
    variable = settings.env_keys.get(loc)
    return variable if variable else ".".join(loc)
