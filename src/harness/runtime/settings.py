"""Settings: where harness keeps its data, and `harness.toml`, validated at start."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from harness.errors import ConfigError
from harness.gateway.profiles import DEFAULT_PROFILE, ModelProfile
from harness.tools.approvals import ApprovalPolicy

if TYPE_CHECKING:
    from pydantic import ValidationError

    from harness.runtime._config_file import FileConfig
    from harness.tools.mcp import MCPServerConfig

__all__ = ["CONFIG_FILE", "Settings", "harness_home", "load_settings"]

CONFIG_FILE = "harness.toml"


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Everything harness reads at start."""

    home: Path
    """`HARNESS_HOME`: where data lives and `harness.toml` is read."""
    default_model: str = DEFAULT_PROFILE
    """The model used when none is named."""
    profiles: Mapping[str, ModelProfile] = field(default_factory=lambda: {})
    """Model profiles from `harness.toml`, by name."""
    mcp_servers: Mapping[str, MCPServerConfig] = field(default_factory=lambda: {})
    """MCP servers from the `[mcp.NAME]` tables of `harness.toml`, by name."""
    approvals: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    """The `[approvals]` table: the policy of agents run from the command line."""


def harness_home() -> Path:
    """`HARNESS_HOME`, or `./.harness` when unset."""
    return Path(os.environ.get("HARNESS_HOME") or ".harness")


def load_settings(home: Path | None = None) -> Settings:
    """Read `HARNESS_HOME/harness.toml` (if present) and `HARNESS_MODEL`.

    Raises:
        ConfigError: The file is not valid TOML or a key is wrong; the message names the
            file and the key.
    """
    home = home or harness_home()
    path = home / CONFIG_FILE
    profiles: dict[str, ModelProfile] = {}
    mcp_servers: dict[str, MCPServerConfig] = {}
    approvals = ApprovalPolicy()
    default = DEFAULT_PROFILE
    if path.is_file():
        config = _read(path)
        profiles = {
            name: ModelProfile(name=name, **entry.model_dump())
            for name, entry in config.models.items()
        }
        mcp_servers = _mcp_servers(config, path)
        approvals = _approvals(config, path)
        default = config.defaults.model
    default = os.environ.get("HARNESS_MODEL") or default
    return Settings(
        home=home,
        default_model=default,
        profiles=profiles,
        mcp_servers=mcp_servers,
        approvals=approvals,
    )


def _read(path: Path) -> FileConfig:
    from pydantic import ValidationError  # validation is only needed when a file exists

    from harness.runtime._config_file import FileConfig

    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    try:
        return FileConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {_describe(exc)}") from exc


def _mcp_servers(config: FileConfig, path: Path) -> dict[str, MCPServerConfig]:
    servers: dict[str, MCPServerConfig] = {}
    for name, entry in config.mcp.items():
        try:
            servers[name] = entry.server_config(name)
        except ConfigError as exc:
            raise ConfigError(f"{path}: key 'mcp.{name}': {exc}") from exc
    return servers


def _approvals(config: FileConfig, path: Path) -> ApprovalPolicy:
    try:
        return config.approvals.policy()
    except ConfigError as exc:
        raise ConfigError(f"{path}: key 'approvals.rules': {exc}") from exc


def _describe(exc: ValidationError) -> str:
    problems: list[str] = []
    for error in exc.errors():
        key = ".".join(str(part) for part in cast(tuple[Any, ...], error["loc"]))
        problems.append(f"key '{key}': {error['msg']}")
    return "; ".join(problems)
