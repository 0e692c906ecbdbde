"""The schema of `harness.toml`, validated with pydantic (imported only when a file exists)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Self, Union, cast, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.gateway.pricing import Prices
from harness.gateway.profiles import DEFAULT_PROFILE, ModelProfile
from harness.observability.config import TraceSettings
from harness.runtime._config_agents import (
    AgentEntry,
    ApprovalsEntry,
    ExperimentEntry,
    LimitsEntry,
    TaskTypeEntry,
    ToolEntry,
    TriggerEntry,
    check_labels,
    flat_tool_tables,
    known_strategy,
)
from harness.runtime.child_limits import ChildLimits
from harness.runtime.runtime_settings import API_KEY_ENV, Backend, RuntimeSettings
from harness.runtime.server_config import ServerConfig, ServerToken
from harness.tools.mcp import MCPServerConfig
from harness.tools.spec import Approval, SideEffects

__all__ = ["ENV_TABLES", "FileConfig", "env_value"]


class _PricesEntry(BaseModel):
    """The `prices` of a profile: US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid")
    input: float = 0.0
    output: float = 0.0
    cached_input: float | None = None


class _ContextEntry(BaseModel):
    """The `context` of a profile: when the context window manager compacts."""

    model_config = ConfigDict(extra="forbid")
    trim_at: float | None = Field(default=None, gt=0, le=1)
    summarize_at: float | None = Field(default=None, gt=0, le=1)
    stage_at: float | None = Field(default=None, gt=0, le=1)
    keep_last_turns: int | None = Field(default=None, ge=1)


class _ProfileEntry(BaseModel):
    """One `[models.NAME]` table: the keys of `ModelProfile`, typed; values are checked there."""

    model_config = ConfigDict(extra="forbid")
    provider: str = "openai"
    model: str = "local"
    base_url: str | None = None
    api_key_env: str | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: list[str] = []
    parallel_tool_calls: bool | None = None
    extra_body: dict[str, Any] = {}
    timeout_s: float = 600.0
    max_retries: int = 2
    fallbacks: list[str] = []
    concurrency: int | None = None
    prices: _PricesEntry = _PricesEntry()
    tool_calls: str = "auto"
    native_tools: bool = True
    streaming: bool = True
    structured_output: bool = True
    context: _ContextEntry = _ContextEntry()

    def profile(self, name: str, base: ModelProfile) -> ModelProfile:
        """`base` with the keys this table sets; keys it leaves out keep `base`'s values.

        Raises:
            ProfileError: A value the profile cannot use.
        """
        values = self.model_dump(exclude_unset=True)
        if "prices" in values:
            given = Prices(**values["prices"])
            values["prices"] = (
                given
                if base.prices is None
                else dataclasses.replace(base.prices, **values["prices"])
            )
        if "context" in values:
            values["context"] = dataclasses.replace(base.context, **values["context"])
        for key in ("stop", "fallbacks"):
            if key in values:
                values[key] = tuple(values[key])
        return dataclasses.replace(base, name=name, **values)


def env_value(key: tuple[str, ...], raw: str, table: type[BaseModel] | None = None) -> Any:
    """The value of an environment variable that sets key `key` of a table, typed for it.

    `table` is the schema of the table (a model profile's when omitted). Lists are JSON
    arrays or comma-separated; tables (`extra_body`, `strategy_options`) are JSON objects;
    every other value stays a string that the schema converts (`"0.2"` to a float,
    `"true"` to a boolean).

    Raises:
        ValueError: A table that is not a JSON object.
    """
    origin = _origin(table or _ProfileEntry, key)
    if origin is list:
        if raw.lstrip().startswith("["):
            return json.loads(raw)
        return [item.strip() for item in raw.split(",") if item.strip()]
    if origin is dict:
        value = json.loads(raw)
        if not isinstance(value, dict):
            raise ValueError('give a JSON object, e.g. {"top_k": 20}')
        return cast("dict[str, Any]", value)
    return raw


def _origin(table: type[BaseModel], key: tuple[str, ...]) -> Any:
    """The container (`list`, `dict`) of the value at `key` of `table`; `None` for a scalar."""
    annotation: Any = table
    for part in key:
        annotation = _required(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(part)
            if field is None:
                return None
            annotation = field.annotation
        elif get_origin(annotation) is dict:
            annotation = get_args(annotation)[1]
        else:
            return None
    return get_origin(_required(annotation))


def _required(annotation: Any) -> Any:
    """`X` of `X | None`."""
    if get_origin(annotation) in (Union, UnionType):
        kinds = [a for a in get_args(annotation) if a is not type(None)]
        return kinds[0] if len(kinds) == 1 else annotation
    return annotation


ENV_TABLES: dict[str, type[BaseModel]] = {}
"""The schema of one table of each `HARNESS_<SECTION>__…` section (filled below)."""


class _Defaults(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = DEFAULT_PROFILE
    strategy: str = "react"
    limits: LimitsEntry = LimitsEntry()

    _known_strategy = field_validator("strategy")(known_strategy)


class _MCPServerEntry(BaseModel):
    """One `[mcp.NAME]` table: a stdio `command` or a streamable HTTP `url`."""

    model_config = ConfigDict(extra="forbid")
    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str | None = Field(default=None, pattern=r"^https?://")
    headers: dict[str, str] = {}
    timeout_s: float = Field(default=30.0, gt=0)
    startup_timeout_s: float = Field(default=30.0, gt=0)
    side_effects: SideEffects = "mutating"
    approval: Approval = "auto"
    tool_prefix: str = ""

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of 'command' (stdio) or 'url' (streamable HTTP)")
        return self

    def server_config(self, name: str) -> MCPServerConfig:
        """The table as the `MCPServerConfig` of server `name`."""
        return MCPServerConfig(
            name=name,
            command=self.command,
            args=tuple(self.args),
            env=self.env,
            cwd=Path(self.cwd) if self.cwd else None,
            url=self.url,
            headers=self.headers,
            timeout_s=self.timeout_s,
            startup_timeout_s=self.startup_timeout_s,
            side_effects=self.side_effects,
            approval=self.approval,
            tool_prefix=self.tool_prefix,
        )


class _StoreEntry(BaseModel):
    """The `[store]` table: a PostgreSQL `url` or a SQLite `path`; `HARNESS_STORE` wins."""

    model_config = ConfigDict(extra="forbid")
    url: str | None = None
    path: str | None = Field(default=None, min_length=1)

    @field_validator("url")
    @classmethod
    def _postgres_url(cls, url: str | None) -> str | None:
        if url is not None and not re.fullmatch(r"postgres(ql)?://\S+", url):
            raise ValueError(
                f"{url!r} is not a PostgreSQL URL: give postgresql://user@host:port/dbname "
                "(or 'path' for a SQLite file)"
            )
        return url

    @model_validator(mode="after")
    def _one_target(self) -> Self:
        if self.url is not None and self.path is not None:
            raise ValueError("give 'url' (PostgreSQL) or 'path' (SQLite), not both")
        return self

    def target(self, home: Path) -> str | None:
        """What `open_store` opens: the URL, or the path (relative to `home`)."""
        if self.path is not None:
            return str(home / Path(self.path).expanduser())
        return self.url


class _ObservabilityEntry(BaseModel):
    """The `[observability]` table: traces (content or not), the metrics endpoint."""

    model_config = ConfigDict(extra="forbid")
    traces: Literal["otlp", "console", "none"] | None = None
    export: Literal["process", "thread"] = "process"
    capture_content: bool | None = None
    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    metrics_host: str = Field(default="127.0.0.1", min_length=1)
    metrics_allow_remote: bool = False

    def settings(self) -> TraceSettings:
        """The tracing part, as the runtime reads it."""
        return TraceSettings(
            traces=self.traces, export=self.export, capture_content=self.capture_content
        )


class _TokenEntry(BaseModel):
    """One `[server.tokens.NAME]` table: the token's SHA-256 and its role."""

    model_config = ConfigDict(extra="forbid")
    sha256: str
    role: Literal["read", "operate", "admin"]

    @model_validator(mode="before")
    @classmethod
    def _no_plain_token(cls, data: object) -> object:
        table = cast(dict[str, Any], data) if isinstance(data, dict) else None
        if table is not None and "token" in table:
            raise ValueError(
                "tokens are kept as hashes, never as text: replace 'token' with 'sha256', "
                "the line `harness serve token new` prints"
            )
        return cast(object, data)

    @field_validator("sha256")
    @classmethod
    def _hex_digest(cls, value: str) -> str:
        if not re.fullmatch(r"[0-9a-f]{64}", value):
            raise ValueError(
                "not a SHA-256 hex digest (64 lowercase hex digits): give the hash of the "
                "token, as `harness serve token new` prints it, not the token"
            )
        return value


class _ServerEntry(BaseModel):
    """The `[server]` table of `harness serve`: tokens, CORS, limits."""

    model_config = ConfigDict(extra="forbid")
    tokens: dict[str, _TokenEntry] = {}
    cors_origins: list[str] = []
    max_body_bytes: int = Field(default=1 << 20, ge=1024)
    keepalive_s: float = Field(default=15.0, gt=0)
    session_hours: float = Field(default=12.0, gt=0)
    live_steps: bool = True
    max_streams: int = Field(default=1000, ge=1)
    max_streams_per_token: int = Field(default=100, ge=1)

    @field_validator("cors_origins")
    @classmethod
    def _origins(cls, origins: list[str]) -> list[str]:
        for origin in origins:
            if origin == "*" or not re.fullmatch(r"https?://[^/\s]+", origin):
                raise ValueError(
                    f"{origin!r} is not an origin: give scheme://host[:port] (no path, no '*')"
                )
        return origins

    @model_validator(mode="after")
    def _distinct_hashes(self) -> Self:
        seen: dict[str, str] = {}
        for name, token in self.tokens.items():
            if token.sha256 in seen:
                raise ValueError(f"tokens {seen[token.sha256]!r} and {name!r} have the same hash")
            seen[token.sha256] = name
        return self

    def config(self) -> ServerConfig:
        """The table as plain data."""
        return ServerConfig(
            tokens=tuple(
                ServerToken(name=name, sha256=t.sha256, role=t.role)
                for name, t in sorted(self.tokens.items())
            ),
            cors_origins=tuple(self.cors_origins),
            max_body_bytes=self.max_body_bytes,
            keepalive_s=self.keepalive_s,
            session_hours=self.session_hours,
            live_steps=self.live_steps,
            max_streams=self.max_streams,
            max_streams_per_token=self.max_streams_per_token,
        )


class _RuntimeEntry(BaseModel):
    """The `[runtime]` table: the engine of the runs (embedded or Temporal) and where it is."""

    model_config = ConfigDict(extra="forbid")
    backend: Backend = "embedded"
    temporal_address: str = "127.0.0.1:7233"
    namespace: str = Field(default="default", pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")
    task_queue: str = Field(default="harness", min_length=1, max_length=1000)
    temporal_tls: bool = False
    temporal_tls_ca: str | None = Field(default=None, min_length=1)
    temporal_tls_cert: str | None = Field(default=None, min_length=1)
    temporal_tls_key: str | None = Field(default=None, min_length=1)
    temporal_tls_domain: str | None = Field(default=None, min_length=1, max_length=253)
    temporal_history_events: int = Field(default=10_000, ge=100, le=50_000)

    @model_validator(mode="before")
    @classmethod
    def _no_api_key(cls, data: object) -> object:
        table = cast(dict[str, Any], data) if isinstance(data, dict) else None
        keys = [  # temporal_tls_key holds a path to a file, not a secret
            k
            for k in table or {}
            if ("key" in k.lower() or "token" in k.lower()) and k != "temporal_tls_key"
        ]
        if keys:
            raise ValueError(
                f"{keys[0]!r}: the Temporal API key is never kept in harness.toml: set the "
                f"environment variable {API_KEY_ENV} instead"
            )
        return cast(object, data)

    @model_validator(mode="after")
    def _tls_files(self) -> _RuntimeEntry:
        given = [k for k in _TLS_KEYS if getattr(self, k) is not None]
        if given and not self.temporal_tls:
            raise ValueError(f"{given[0]} needs temporal_tls = true")
        if (self.temporal_tls_cert is None) != (self.temporal_tls_key is None):
            raise ValueError(
                "temporal_tls_cert and temporal_tls_key come together: a client certificate "
                "and its private key"
            )
        return self

    @field_validator("temporal_address")
    @classmethod
    def _host_port(cls, address: str) -> str:
        host, _, port = address.rpartition(":")
        if not host or any(c.isspace() or c == "/" for c in host) or not _port(port):
            raise ValueError(
                f"{address!r} is not host:port (e.g. 127.0.0.1:7233, or "
                "NAMESPACE.ACCOUNT.tmprl.cloud:7233 for Temporal Cloud)"
            )
        return address

    @field_validator("task_queue")
    @classmethod
    def _queue_name(cls, queue: str) -> str:
        if queue != queue.strip() or queue.startswith("/_sys/"):
            raise ValueError(
                f"{queue!r}: a task queue has no surrounding spaces and does not start "
                "with /_sys/ (Temporal's own)"
            )
        return queue

    def settings(self, api_key: str | None) -> RuntimeSettings:
        """The table as plain data, with the API key from the environment."""
        return RuntimeSettings(
            backend=self.backend,
            temporal_address=self.temporal_address,
            namespace=self.namespace,
            task_queue=self.task_queue,
            temporal_tls=self.temporal_tls,
            temporal_tls_ca=self.temporal_tls_ca,
            temporal_tls_cert=self.temporal_tls_cert,
            temporal_tls_key=self.temporal_tls_key,
            temporal_tls_domain=self.temporal_tls_domain,
            temporal_history_events=self.temporal_history_events,
            temporal_api_key=api_key,
        )


_TLS_KEYS = ("temporal_tls_ca", "temporal_tls_cert", "temporal_tls_key", "temporal_tls_domain")


def _port(text: str) -> bool:
    return text.isdigit() and 0 < int(text) < 65536


class _ChildrenEntry(BaseModel):
    """The `[children]` table: bounds on child runs (agents used as tools)."""

    model_config = ConfigDict(extra="forbid")
    max_depth: int = Field(default=5, ge=1, le=100)
    max_children: int = Field(default=100, ge=1)

    def limits(self) -> ChildLimits:
        """The table as `ChildLimits`."""
        return ChildLimits(max_depth=self.max_depth, max_children=self.max_children)


class FileConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    children: _ChildrenEntry = _ChildrenEntry()
    runtime: _RuntimeEntry = _RuntimeEntry()
    server: _ServerEntry = _ServerEntry()
    defaults: _Defaults = _Defaults()
    observability: _ObservabilityEntry = _ObservabilityEntry()
    store: _StoreEntry = _StoreEntry()
    models: dict[str, _ProfileEntry] = {}
    mcp: dict[str, _MCPServerEntry] = {}
    tools: dict[str, ToolEntry] = {}
    approvals: ApprovalsEntry = ApprovalsEntry()
    agents: dict[str, AgentEntry] = {}
    task_types: dict[str, TaskTypeEntry] = {}
    experiments: dict[str, ExperimentEntry] = {}
    triggers: list[TriggerEntry] = []

    _task_type_names = field_validator("task_types")(check_labels)
    _tool_tables = field_validator("tools", mode="before")(flat_tool_tables)


ENV_TABLES.update(
    models=_ProfileEntry,
    agents=AgentEntry,
    task_types=TaskTypeEntry,
    experiments=ExperimentEntry,
    tools=ToolEntry,
)
