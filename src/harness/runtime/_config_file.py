"""The schema of `harness.toml`, validated with pydantic (imported only when a file exists)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from harness.gateway.profiles import DEFAULT_PROFILE

__all__ = ["FileConfig"]


class _ProfileConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    provider: Literal["openai"] = "openai"
    model: str = "local"
    base_url: str | None = None
    api_key_env: str | None = None
    timeout_s: float = 600.0
    context_window: int | None = None


class _Defaults(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = DEFAULT_PROFILE


class FileConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    defaults: _Defaults = _Defaults()
    models: dict[str, _ProfileConfig] = {}
