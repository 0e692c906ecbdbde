"""The schema of `harness.toml`, validated with pydantic (imported only when a file exists)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.gateway.profiles import DEFAULT_PROFILE
from harness.tools.approvals import ApprovalPolicy, ApprovalRule
from harness.tools.mcp import MCPServerConfig
from harness.tools.spec import Approval, SideEffects

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


class _RuleEntry(BaseModel):
    """One `[[approvals.rules]]` entry."""

    model_config = ConfigDict(extra="forbid")
    tool: str = "*"
    decision: Approval = "ask"
    when: dict[str, str] = {}
    reason: str | None = None


class _ApprovalsEntry(BaseModel):
    """The `[approvals]` table: per-tool decisions and rules on arguments."""

    model_config = ConfigDict(extra="forbid")
    tools: dict[str, Approval] = {}
    rules: list[_RuleEntry] = []

    def policy(self) -> ApprovalPolicy:
        """The table as an `ApprovalPolicy`."""
        return ApprovalPolicy(
            rules=tuple(ApprovalRule(**rule.model_dump()) for rule in self.rules),
            tools=dict(self.tools),
        )


class FileConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    defaults: _Defaults = _Defaults()
    models: dict[str, _ProfileConfig] = {}
    mcp: dict[str, _MCPServerEntry] = {}
    approvals: _ApprovalsEntry = _ApprovalsEntry()
