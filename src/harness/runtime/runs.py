"""What the runtime keeps about each run it executes, and how agents travel between processes."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.agent.spec import AgentSpec
from harness.core.usage import Limits
from harness.tools.approvals import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    ApprovalRule,
)

__all__ = ["RunHandle", "agent_from_metadata", "agent_metadata"]


@dataclass(kw_only=True)
class RunHandle:
    """A run executing in this process: its task and the requests waiting on it."""

    run_id: str
    task: asyncio.Task[None] | None = None
    pause_requested: bool = False
    cancel_reason: str | None = None
    cancelled_by: str | None = None
    approvals: dict[str, asyncio.Future[ApprovalDecision]] = field(default_factory=lambda: {})

    async def wait_for_decision(self, request: ApprovalRequest) -> ApprovalDecision:
        """Wait until `approve` or `deny` arrives for this call, from any process."""
        future = self.approvals.get(request.call_id)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            self.approvals[request.call_id] = future
        try:
            return await future
        finally:
            self.approvals.pop(request.call_id, None)

    def decide(self, call_id: str, decision: ApprovalDecision) -> None:
        """Deliver a decision; one that arrives before the request waits for it."""
        future = self.approvals.get(call_id)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            self.approvals[call_id] = future
        if not future.done():
            future.set_result(decision)


_PORTABLE_LIMITS = tuple(f.name for f in dataclasses.fields(Limits))


def agent_metadata(agent: AgentSpec) -> dict[str, Any] | None:
    """The agent as JSON, when any process can rebuild it (a model name, built-in tools).

    Agents with Python tools or model objects can only run in a process that registered
    them; `None` says so.
    """
    if not isinstance(agent.model, str) or not all(isinstance(t, str) for t in agent.tools):
        return None
    if not all(isinstance(m, str) for m in agent.mcp):
        return None
    return {
        "name": agent.name,
        "model": agent.model,
        "base_url": agent.base_url,
        "instructions": agent.instructions,
        "tools": list(agent.tools),
        "mcp": list(agent.mcp),
        "limits": {name: getattr(agent.limits, name) for name in _PORTABLE_LIMITS},
        "workspace": str(agent.workspace) if agent.workspace else None,
        "network": agent.network,
        "allow_unsandboxed": agent.allow_unsandboxed,
        "strategy": agent.strategy,
        "strategy_options": dict(agent.strategy_options),
        "approvals": {
            "tools": dict(agent.approvals.tools),
            "rules": [
                {"tool": r.tool, "decision": r.decision, "when": dict(r.when), "reason": r.reason}
                for r in agent.approvals.rules
            ],
        },
    }


def agent_from_metadata(data: Mapping[str, Any]) -> AgentSpec:
    """Rebuild an agent written by `agent_metadata`."""
    workspace = data.get("workspace")
    return AgentSpec(
        name=str(data["name"]),
        model=str(data["model"]),
        base_url=data.get("base_url"),
        instructions=str(data["instructions"]),
        tools=tuple(str(t) for t in data.get("tools") or ()),
        mcp=tuple(str(m) for m in data.get("mcp") or ()),
        limits=Limits(**dict(data.get("limits") or {})),
        workspace=Path(workspace) if workspace else None,
        network=bool(data.get("network")),
        allow_unsandboxed=bool(data.get("allow_unsandboxed")),
        approvals=_policy(data.get("approvals") or {}),
        strategy=str(data.get("strategy") or "react"),
        strategy_options=dict(data.get("strategy_options") or {}),
    )


def _policy(data: Mapping[str, Any]) -> ApprovalPolicy:
    rules = tuple(ApprovalRule(**rule) for rule in data.get("rules") or ())
    return ApprovalPolicy(rules=rules, tools=dict(data.get("tools") or {}))
