"""Settings: where harness keeps its data, and `harness.toml`, validated at start."""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from harness.core.usage import Limits
from harness.errors import ConfigError, ProfileError
from harness.gateway.profiles import (
    BUILTIN_PROFILES,
    DEFAULT_PROFILE,
    ModelProfile,
    check_profiles,
    resolve_profile,
)
from harness.observability.config import TraceSettings
from harness.runtime.child_limits import ChildLimits
from harness.runtime.runtime_settings import API_KEY_ENV, RuntimeSettings
from harness.runtime.server_config import ServerConfig
from harness.tools.approvals import ApprovalPolicy

if TYPE_CHECKING:
    from pydantic import ValidationError

    from harness.runtime._agents_config import AgentConfig, ExperimentConfig, TaskTypeConfig
    from harness.runtime._config_file import FileConfig
    from harness.runtime._trigger_rules import Trigger
    from harness.runtime.registry import ToolConfig
    from harness.tools.mcp import MCPServerConfig

__all__ = [
    "CONFIG_FILE",
    "ENV_SECTIONS",
    "FLAT_ENV_SECTIONS",
    "MODEL_ENV_PREFIX",
    "MetricsSettings",
    "Settings",
    "harness_home",
    "load_settings",
]

CONFIG_FILE = "harness.toml"

MODEL_ENV_PREFIX = "HARNESS_MODELS__"
"""`HARNESS_MODELS__<PROFILE>__<KEY>=VALUE` sets `models.<profile>.<key>`, over the file.

The other tables of named tables take variables of the same form (`ENV_SECTIONS`):
`HARNESS_AGENTS__SUPPORT__MODEL=fast`, `HARNESS_TASK_TYPES__REFUND__STRATEGY=react`,
`HARNESS_EXPERIMENTS__REFUND_MODEL__VARIANTS__B__WEIGHT=0`,
`HARNESS_EXPERIMENTS__REFUND_MODEL__KEEP=a`, `HARNESS_TOOLS__LOOKUP__MAX_CONCURRENT=2`;
`[defaults]` and `[runtime]` take
`HARNESS_DEFAULTS__<KEY>` (`HARNESS_DEFAULTS__LIMITS__MAX_STEPS=10`) and
`HARNESS_RUNTIME__<KEY>` (`HARNESS_RUNTIME__BACKEND=temporal`).

`<PROFILE>` matches a profile of the file or a built-in one ignoring case, with any
character other than a letter or digit written `_`; any other name adds a profile (named in
lower case). `<KEY>` is a key of `[models.NAME]`; tables take one more level
(`HARNESS_MODELS__FAST__PRICES__INPUT=0.4`). Values are typed by the schema: numbers and
booleans as written (`0.2`, `true`), lists as JSON arrays or comma-separated
(`fallbacks=local,openai:gpt-4.1-mini`), `extra_body` as a JSON object. An empty value
unsets the key, so that the built-in or default value applies.
"""


ENV_SECTIONS = ("models", "agents", "task_types", "experiments", "tools")
"""The sections of named tables whose keys `HARNESS_<SECTION>__<NAME>__<KEY>` sets."""

FLAT_ENV_SECTIONS = {"defaults": "STRATEGY", "runtime": "BACKEND"}
"""The plain tables whose keys `HARNESS_<SECTION>__<KEY>` sets, with an example key."""


@dataclass(frozen=True, kw_only=True)
class MetricsSettings:
    """`[observability] metrics_*`: where `harness worker` serves `/metrics`."""

    port: int | None = None
    """`metrics_port`: serve the metrics on this port; `None` serves none."""
    host: str = "127.0.0.1"
    """`metrics_host`: the address to listen on; a loopback one unless `allow_remote`."""
    allow_remote: bool = False
    """`metrics_allow_remote`: allow a host other than the loopback."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Everything harness reads at start."""

    home: Path
    """`HARNESS_HOME`: where data lives and `harness.toml` is read."""
    default_model: str = DEFAULT_PROFILE
    """The model used when none is named."""
    profiles: Mapping[str, ModelProfile] = field(default_factory=lambda: dict(BUILTIN_PROFILES))
    """Model profiles by name: the built-in ones, and those of `harness.toml` and the
    environment (which change built-ins of the same name key by key)."""
    mcp_servers: Mapping[str, MCPServerConfig] = field(default_factory=lambda: {})
    """MCP servers from the `[mcp.NAME]` tables of `harness.toml`, by name."""
    tools: Mapping[str, ToolConfig] = field(default_factory=lambda: {})
    """The `[tools.NAME]` tables (limits, tags, Python tools of the registry), by name."""
    approvals: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    """The `[approvals]` table: the policy of agents run from the command line."""
    default_strategy: str = "react"
    """`[defaults] strategy`: the strategy of agents run from the command line."""
    default_limits: Limits = field(default_factory=Limits)
    """`[defaults] limits`: the budgets of agents run from the command line."""
    store: str | None = None
    """The store to open: `HARNESS_STORE`, else `[store] url` or `path`; `None` is
    `HARNESS_HOME/harness.db`."""
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    """`[observability] metrics_*`: the worker's Prometheus endpoint."""
    observability: TraceSettings = field(default_factory=TraceSettings)
    """The `[observability]` table: traces and whether they carry message content."""
    agents: Mapping[str, AgentConfig] = field(default_factory=lambda: {})
    """The `[agents.NAME]` tables, by name."""
    task_types: Mapping[str, TaskTypeConfig] = field(default_factory=lambda: {})
    """The `[task_types.NAME]` tables, by name."""
    experiments: Mapping[str, ExperimentConfig] = field(default_factory=lambda: {})
    """The `[experiments.NAME]` tables, by name."""
    defaults_set: frozenset[str] = frozenset()
    """The keys `[defaults]` sets, flat (`model`, `limits.max_steps`); the others are the
    built-in defaults (for `harness config show`)."""
    runtime_set: frozenset[str] = frozenset()
    """The keys `[runtime]` sets (in the file or by `HARNESS_RUNTIME__*`), for `harness
    config show`."""
    env_keys: Mapping[tuple[str, ...], str] = field(default_factory=lambda: {})
    """Keys set by environment variables, with the variable (for `harness config show`)."""
    server: ServerConfig = field(default_factory=ServerConfig)
    """The `[server]` table: tokens and limits of `harness serve`."""
    children: ChildLimits = field(default_factory=ChildLimits)
    """The `[children]` table: depth and number of child runs (agents used as tools)."""
    triggers: tuple[Trigger, ...] = ()
    """The `[[triggers]]` tables, checked (`Harness.on` for the same in Python)."""
    runtime: RuntimeSettings = field(default_factory=RuntimeSettings)
    """The `[runtime]` table: the engine of the runs (embedded or Temporal)."""

    def source_of(self, loc: tuple[str, ...]) -> str:
        """Where key `loc` of the file was set: `harness.toml` or a variable."""
        return self.env_keys.get(loc) or f"{self.home / CONFIG_FILE}"


def harness_home() -> Path:
    """`HARNESS_HOME`, or `./.harness` when unset."""
    return Path(os.environ.get("HARNESS_HOME") or ".harness")


def load_settings(home: Path | None = None) -> Settings:
    """Read `HARNESS_HOME/harness.toml` (if present) and the environment.

    The environment overrides the file: `HARNESS_MODEL` names the default model,
    `HARNESS_STORE` the store, and
    `HARNESS_MODELS__<PROFILE>__<KEY>=VALUE` sets one key of a model profile (see
    `MODEL_ENV_PREFIX`).

    Raises:
        ConfigError: The file is not valid TOML, or a key (from the file or the
            environment) is wrong; the message names the file or the variable, and the key.
    """
    home = home or harness_home()
    path = home / CONFIG_FILE
    raw = _read_toml(path) if path.exists() else {}
    sources = _Sources(path=path)
    _apply_env(raw, os.environ, sources)
    settings = Settings(home=home)
    if raw:
        config = _validate(raw, sources)
        profiles = _profiles(config, sources)
        mcp_servers = _mcp_servers(config, path)
        settings = Settings(
            home=home,
            default_model=config.defaults.model,
            profiles=profiles,
            mcp_servers=mcp_servers,
            tools=_tools(config, mcp_servers, sources),
            approvals=_approvals(config, path),
            default_strategy=config.defaults.strategy,
            default_limits=config.defaults.limits.limits(),
            store=config.store.target(home),
            metrics=MetricsSettings(
                port=config.observability.metrics_port,
                host=config.observability.metrics_host,
                allow_remote=config.observability.metrics_allow_remote,
            ),
            observability=config.observability.settings(),
            server=config.server.config(),
            children=config.children.limits(),
            runtime=_runtime(config, sources),
            **_configured(config, sources, profiles=profiles, mcp_servers=mcp_servers),
        )
    env_model, env_store = os.environ.get("HARNESS_MODEL"), os.environ.get("HARNESS_STORE")
    return dataclasses.replace(
        settings,
        default_model=_default_model(env_model or settings.default_model, settings.profiles, path),
        store=env_store or settings.store,
    )


@dataclass
class _Sources:
    """Where each key came from: the file, or an environment variable."""

    path: Path
    env: dict[tuple[str, ...], str] = field(default_factory=lambda: {})

    def problem(self, loc: tuple[str, ...], message: str) -> str:
        """`message` about key `loc`, prefixed with the variable or file that set it."""
        key = ".".join(loc)
        for end in range(len(loc), 0, -1):
            variable = self.env.get(loc[:end])
            if variable:
                return f"environment variable {variable}: key '{key}': {message}"
        return f"{self.path}: key '{key}': {message}"


def _read_toml(path: Path) -> dict[str, Any]:
    if path.is_dir():
        raise ConfigError(f"{path} is a directory: {CONFIG_FILE} must be a file (or absent)")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {exc.start}): {CONFIG_FILE} must be TOML"
        ) from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc


def _validate(raw: dict[str, Any], sources: _Sources) -> FileConfig:
    from pydantic import ValidationError  # validation is only needed when there is config

    from harness.runtime._config_file import FileConfig

    try:
        return FileConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, sources)) from exc


def _apply_env(raw: dict[str, Any], environ: Mapping[str, str], sources: _Sources) -> None:
    """Set the keys that `HARNESS_<SECTION>__…` variables give (`ENV_SECTIONS`, defaults)."""
    for section in (*ENV_SECTIONS, *FLAT_ENV_SECTIONS):
        prefix = f"HARNESS_{section.upper()}__"
        variables = sorted(v for v in environ if v.upper().startswith(prefix))
        if not variables:
            continue
        from harness.runtime._config_file import ENV_TABLES, env_value

        tables = raw.setdefault(section, {})
        if not isinstance(tables, dict):
            continue  # the file's own error is reported by validation
        if section == "tools":  # [tools.SERVER.TOOL] as "SERVER.TOOL", as variables name it
            from harness.runtime._config_agents import flatten_tool_tables

            tables = raw[section] = flatten_tool_tables(cast(dict[str, Any], tables))
        builtins = list(BUILTIN_PROFILES) if section == "models" else []
        for variable in variables:
            if section in FLAT_ENV_SECTIONS:
                table, name = cast(dict[str, Any], tables), None
                key, schema = _key_of(variable, prefix, FLAT_ENV_SECTIONS[section]), None
            else:
                name, key = _split_variable(variable, prefix, [*builtins, *tables])
                table = cast(dict[str, Any], tables).setdefault(name, {})
                schema = ENV_TABLES[section]
            if not isinstance(table, dict):
                continue
            loc = (section, *((name,) if name else ()), *key)
            value = environ[variable]
            if not value:
                _unset(cast(dict[str, Any], table), key)
                continue
            try:
                typed = value if schema is None else env_value(key, value, schema)
            except ValueError as exc:
                raise ConfigError(
                    f"environment variable {variable}: key '{'.'.join(loc)}': {exc}"
                ) from exc
            _set(cast(dict[str, Any], table), key, typed)
            sources.env[loc] = variable


def _key_of(variable: str, prefix: str, example: str) -> tuple[str, ...]:
    parts = variable[len(prefix) :].split("__")
    if not all(parts):
        raise ConfigError(f"environment variable {variable}: name a key, as in {prefix}{example}")
    return tuple(part.lower() for part in parts)


def _split_variable(variable: str, prefix: str, names: list[str]) -> tuple[str, tuple[str, ...]]:
    """The table and key a variable sets.

    The table is matched ignoring case and punctuation: `HARNESS_MODELS__GPT_4O__…` sets
    profile `gpt-4o`.
    """
    parts = variable[len(prefix) :].split("__")
    if len(parts) < 2 or not all(parts):
        raise ConfigError(
            f"environment variable {variable}: name a {_what(prefix)} and a key, as in "
            f"{MODEL_ENV_PREFIX}LOCAL__BASE_URL or {MODEL_ENV_PREFIX}FAST__PRICES__INPUT"
        )
    matches = sorted({name for name in names if _env_form(name) == parts[0].upper()})
    if len(matches) > 1:
        raise ConfigError(
            f"environment variable {variable}: {parts[0]!r} could be {_what(prefix)} "
            f"{' or '.join(matches)}: rename one of them in {CONFIG_FILE}"
        )
    name = matches[0] if matches else parts[0].lower()
    return name, tuple(part.lower() for part in parts[1:])


def _what(prefix: str) -> str:
    """What one table of the section of `prefix` is called, e.g. `profile`."""
    section = prefix.removeprefix("HARNESS_").removesuffix("__").lower()
    return {"models": "profile", "task_types": "task type"}.get(section, section.rstrip("s"))


def _env_form(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def _set(table: dict[str, Any], key: tuple[str, ...], value: Any) -> None:
    for lowered in key[:-1]:
        part = next((k for k in table if _env_form(k) == _env_form(lowered)), lowered)
        inner = table.get(part)
        if not isinstance(inner, dict):
            inner = table[part] = {}
        table = cast(dict[str, Any], inner)
    table[key[-1]] = value


def _unset(table: dict[str, Any], key: tuple[str, ...]) -> None:
    for part in key[:-1]:
        inner = table.get(part)
        if not isinstance(inner, dict):
            return
        table = cast(dict[str, Any], inner)
    table.pop(key[-1], None)


def _profiles(config: FileConfig, sources: _Sources) -> dict[str, ModelProfile]:
    """Built-in profiles, with the file's and the environment's tables laid over them."""
    profiles: dict[str, ModelProfile] = dict(BUILTIN_PROFILES)
    try:
        for name, entry in config.models.items():
            base = BUILTIN_PROFILES.get(name) or ModelProfile(name=name)
            profiles[name] = entry.profile(name, base)
            _check_context(profiles[name], sources)
        check_profiles(profiles)
    except ProfileError as exc:
        loc = ("models", exc.profile, *exc.key.split("."))
        raise ConfigError(sources.problem(loc, exc.problem)) from exc
    return profiles


def _check_context(profile: ModelProfile, sources: _Sources) -> None:
    """Check the profile's context thresholds together with the defaults of the others."""
    from harness.memory import ContextPolicy

    try:
        ContextPolicy.for_profile(profile)
    except ConfigError as exc:
        problem = str(exc.__cause__ or exc)
        raise ConfigError(sources.problem(("models", profile.name, "context"), problem)) from exc


def _default_model(name: str, profiles: Mapping[str, ModelProfile], path: Path) -> str:
    try:
        resolve_profile(name, profiles)
    except ConfigError as exc:
        where = (
            "HARNESS_MODEL" if os.environ.get("HARNESS_MODEL") else f"{path}: key 'defaults.model'"
        )
        raise ConfigError(f"{where}: {exc}") from exc
    return name


def _mcp_servers(config: FileConfig, path: Path) -> dict[str, MCPServerConfig]:
    servers: dict[str, MCPServerConfig] = {}
    for name, entry in config.mcp.items():
        try:
            servers[name] = entry.server_config(name)
        except ConfigError as exc:
            raise ConfigError(f"{path}: key 'mcp.{name}': {exc}") from exc
    return servers


def _tools(
    config: FileConfig, mcp_servers: Mapping[str, MCPServerConfig], sources: _Sources
) -> dict[str, ToolConfig]:
    """The `[tools.NAME]` tables; a dotted name must start with a configured MCP server."""
    from harness.runtime.registry import ToolConfig

    found: dict[str, ToolConfig] = {}
    for name, entry in config.tools.items():
        server = name.split(".")[0] if "." in name else None
        if server is not None and server not in mcp_servers:
            known = ", ".join(sorted(mcp_servers)) or "none"
            raise ConfigError(
                sources.problem(
                    ("tools", name),
                    f"no MCP server {server!r} (configured: {known}): a dotted name is "
                    "SERVER.TOOL, a tool of an [mcp.SERVER] table",
                )
            )
        found[name] = ToolConfig(
            name=name,
            max_concurrent=entry.max_concurrent,
            tags=tuple(entry.tags),
            function=entry.function,
        )
    return found


def _runtime(config: FileConfig, sources: _Sources) -> RuntimeSettings:
    """The `[runtime]` table; Temporal needs its SDK, and TLS to send an API key."""
    runtime = config.runtime.settings(os.environ.get(API_KEY_ENV) or None)
    if not runtime.temporal:
        return runtime
    from harness.distributed.temporal import TEMPORAL_EXTRA_HINT, temporal_installed

    if not temporal_installed():
        problem = f"'temporal' needs the temporalio SDK, not installed here: {TEMPORAL_EXTRA_HINT}"
        raise ConfigError(sources.problem(("runtime", "backend"), problem))
    if runtime.temporal_api_key is not None and not runtime.temporal_tls:
        problem = (
            f"false while {API_KEY_ENV} is set: an API key never travels without TLS; "
            "set temporal_tls = true (or unset the variable)"
        )
        raise ConfigError(sources.problem(("runtime", "temporal_tls"), problem))
    return _tls_files(runtime, sources)


def _tls_files(runtime: RuntimeSettings, sources: _Sources) -> RuntimeSettings:
    """The TLS files of `[runtime]` as absolute paths (relative: from the file's folder).

    Each is read now: a missing or non-PEM file fails at start, naming its key.
    """
    found: dict[str, str] = {}
    for key in ("temporal_tls_ca", "temporal_tls_cert", "temporal_tls_key"):
        given: str | None = getattr(runtime, key)
        if given is None:
            continue
        path = (sources.path.parent / Path(given).expanduser()).absolute()
        try:
            text = path.read_bytes()
        except OSError as exc:
            why = f"cannot read {path}: {exc.strerror or exc}"
            raise ConfigError(sources.problem(("runtime", key), why)) from None
        if b"-----BEGIN " not in text:
            why = f"{path} is not a PEM file (no -----BEGIN line)"
            raise ConfigError(sources.problem(("runtime", key), why))
        found[key] = str(path)
    return dataclasses.replace(runtime, **found) if found else runtime


def _approvals(config: FileConfig, path: Path) -> ApprovalPolicy:
    try:
        return config.approvals.policy()
    except ConfigError as exc:
        raise ConfigError(f"{path}: key 'approvals.rules': {exc}") from exc


def _describe(exc: ValidationError, sources: _Sources) -> str:
    problems: list[str] = []
    for error in exc.errors():
        loc = tuple(str(part) for part in cast(tuple[Any, ...], error["loc"]))
        problems.append(sources.problem(loc, error["msg"]))
    return "; ".join(problems)


def _configured(
    config: FileConfig,
    sources: _Sources,
    *,
    profiles: Mapping[str, ModelProfile],
    mcp_servers: Mapping[str, MCPServerConfig],
) -> dict[str, Any]:
    """The `Settings` fields of agents, task types and experiments."""
    from harness.runtime._catalog import entry_point_names
    from harness.runtime._settings_agents import (
        agents_of,
        experiments_of,
        task_types_of,
        triggers_of,
    )

    agents = agents_of(
        config,
        home=sources.path.parent,
        profiles=profiles,
        mcp_servers=mcp_servers,
        problem=sources.problem,
    )

    def exists(name: str) -> bool:
        return name in agents or name in entry_point_names()

    defaults = config.defaults
    return {
        "agents": agents,
        "task_types": task_types_of(
            config, profiles=profiles, agents=exists, problem=sources.problem
        ),
        "experiments": experiments_of(
            config, profiles=profiles, agents=exists, problem=sources.problem
        ),
        "defaults_set": frozenset(
            {
                *(defaults.model_fields_set - {"limits"}),
                *(f"limits.{k}" for k in defaults.limits.model_fields_set),
            }
        ),
        "runtime_set": frozenset(config.runtime.model_fields_set),
        "env_keys": dict(sources.env),
        "triggers": triggers_of(config, agents=exists, problem=sources.problem),
    }
