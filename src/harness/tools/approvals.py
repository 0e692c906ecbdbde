"""Approval policies: which tool calls run on their own, wait for a person, or never run.

A policy is decided before a call runs, from the tool's own `approval` setting, the
agent's per-tool settings, and rules on the call's arguments (for example: bash commands
that match `git push|rm -rf` ask, all others run). The first matching rule wins.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, cast

from harness.core.bounds import json_bound_problem
from harness.core.messages import ToolCall
from harness.errors import ConfigError
from harness.tools.spec import Approval, ToolSpec

__all__ = [
    "ApprovalDecision",
    "ApprovalHandler",
    "ApprovalPolicy",
    "ApprovalRequest",
    "ApprovalRule",
    "PolicyDecision",
    "deny_all",
]


@dataclass(frozen=True, kw_only=True)
class ApprovalRule:
    """One rule: for calls of matching tools whose arguments match, decide `decision`."""

    tool: str = "*"
    """Tool name, or a shell-style pattern such as `mcp_git_*`."""
    decision: Approval = "ask"
    """What matching calls get: `auto`, `ask` or `deny`."""
    when: Mapping[str, str] = field(default_factory=lambda: {})
    """Argument name to regular expression; every one must match (`re.search` on the
    argument's text). Empty matches every call of the tool."""
    reason: str | None = None
    """Shown to the person who decides, and to the model when the call is denied."""

    def __post_init__(self) -> None:
        for name, pattern in self.when.items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(
                    f"approval rule for {self.tool!r}: pattern for {name!r} is not a valid "
                    f"regular expression: {exc}"
                ) from exc

    def matches(self, tool: str, arguments: Mapping[str, Any]) -> bool:
        """Whether this rule applies to a call of `tool` with `arguments`."""
        if not fnmatch.fnmatchcase(tool, self.tool):
            return False
        return all(
            name in arguments and re.search(pattern, _as_text(arguments[name])) is not None
            for name, pattern in self.when.items()
        )


@dataclass(frozen=True, kw_only=True)
class PolicyDecision:
    """What a policy decided for one call, and why."""

    decision: Approval
    """`auto` runs the call, `ask` waits for a person, `deny` refuses it."""
    source: str
    """Where the decision came from: `rule`, `agent` or `tool`."""
    reason: str | None = None
    """Why, when a rule or setting gave a reason."""


@dataclass(frozen=True, kw_only=True)
class ApprovalPolicy:
    """The approval policy of one agent."""

    rules: tuple[ApprovalRule, ...] = ()
    """Checked in order before anything else; the first that matches decides."""
    tools: Mapping[str, Approval] = field(default_factory=lambda: {})
    """Per-tool decisions that replace each tool's own `approval` setting."""

    def decide(self, call: ToolCall, spec: ToolSpec | None) -> PolicyDecision:
        """Decide for one call; unknown tools are `auto` (they fail without running)."""
        arguments: Mapping[str, Any] = _arguments(call.arguments) if self.rules else {}
        for rule in self.rules:
            if rule.matches(call.name, arguments):
                return PolicyDecision(decision=rule.decision, source="rule", reason=rule.reason)
        if call.name in self.tools:
            return PolicyDecision(decision=self.tools[call.name], source="agent")
        if spec is None or spec.approval == "auto":
            return _AUTO_BY_TOOL
        return PolicyDecision(decision=spec.approval, source="tool", reason=_tool_reason(spec))


_AUTO_BY_TOOL: Final = PolicyDecision(decision="auto", source="tool")
"""The decision on most calls: the tool runs on its own (shared: it is frozen)."""


@dataclass(frozen=True, kw_only=True)
class ApprovalRequest:
    """A call waiting for a person's decision."""

    run_id: str
    call_id: str
    tool: str
    arguments: str
    """The arguments exactly as the model sent them."""
    reason: str | None = None
    """Why the call needs approval."""


@dataclass(frozen=True, kw_only=True)
class ApprovalDecision:
    """A person's (or a program's) answer to an `ApprovalRequest`."""

    approved: bool
    by: str
    """Who decided, e.g. `user:alice`, `cli`, `policy`."""
    reason: str | None = None
    """Why; a denial's reason is passed on to the model."""


class ApprovalHandler(Protocol):
    """Asks someone to approve or deny a call, and waits for the answer."""

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        """Return the decision for `request`."""
        ...


async def deny_all(request: ApprovalRequest) -> ApprovalDecision:
    """The handler used when none is attached: every call that asks is denied."""
    return ApprovalDecision(
        approved=False,
        by="harness",
        reason="no one is attached to approve calls in this run",
    )


def _tool_reason(spec: ToolSpec) -> str | None:
    if spec.approval == "auto":
        return None
    return f"tool {spec.name!r} is set to approval={spec.approval!r}"


def _arguments(raw: str) -> Mapping[str, Any]:
    """The decoded arguments, or none when they cannot be read (the toolset then refuses them)."""
    if json_bound_problem(raw):
        return {}
    try:
        value: object = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):
        return {}
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _as_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)
