"""What the runtime keeps about each run it executes, and how agents travel between processes."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from harness.agent.spec import AgentSpec
from harness.core.codec import result_to_dict
from harness.core.results import RunResult
from harness.core.usage import Limits
from harness.errors import RunInterrupted
from harness.gateway.model import ModelSettings, ResponseFormat
from harness.memory import ContextPolicy
from harness.tools.approvals import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    ApprovalRule,
)

__all__ = ["RunHandle", "agent_from_metadata", "agent_metadata", "result_data"]

T = TypeVar("T")


@dataclass(kw_only=True, slots=True)
class RunHandle:
    """A run executing in this process: its task and the requests waiting on it."""

    run_id: str
    task: asyncio.Task[None] | None = None
    pause_requested: bool = False
    paused_at: str = "step boundary"
    """Where a pause stopped the run: at a step boundary, while it waited for approval, or
    while a parked tool call waited (`wait`)."""
    cancel_reason: str | None = None
    cancelled_by: str | None = None
    approvals: dict[str, asyncio.Future[ApprovalDecision]] | None = None
    """Decisions awaited or delivered early, by call id; made by the first."""
    holds: set[asyncio.Future[None]] | None = None
    """Parked calls' waits (`hold`), each ended early by a pause; made by the first."""
    mail: bool = False
    """Whether the run's inbox may hold a message it has not read (a `mail` control came)."""
    mail_arrived: asyncio.Event | None = None
    """Set with `mail`, for a call that waits for a message; made by the first such wait."""

    def note_mail(self) -> None:
        """A message may have arrived in the run's inbox."""
        self.mail = True
        if self.mail_arrived is not None:
            self.mail_arrived.set()

    async def hold(self, until: Awaitable[T]) -> T:
        """Await a parked call's `until`, unless a pause comes first.

        Raises:
            RunInterrupted: A pause was asked for (before or during the wait): the run
                pauses here, and the call runs again on resume.
        """
        waiting = asyncio.ensure_future(until)
        paused = asyncio.get_running_loop().create_future()
        if self.pause_requested:
            paused.set_result(None)
        holds = self.holds = self.holds or set()
        holds.add(paused)
        try:
            await asyncio.wait((waiting, paused), return_when=asyncio.FIRST_COMPLETED)
        finally:
            holds.discard(paused)
            if not waiting.done():
                waiting.cancel()
        if waiting.done() and not waiting.cancelled():
            return waiting.result()
        self.paused_at = "wait"
        raise RunInterrupted(f"run {self.run_id} paused while a tool call waited")

    async def wait_for_decision(self, request: ApprovalRequest) -> ApprovalDecision:
        """Wait until `approve` or `deny` arrives for this call, from any process.

        Raises:
            RunInterrupted: A pause was asked for (before or during the wait): the run
                pauses here, and the call, which never started, is asked again on resume.
        """
        future = self._decision(request.call_id)
        try:
            if self.pause_requested and not future.done():
                future.set_exception(_paused_while_waiting(self.run_id))
            return await future
        except RunInterrupted:
            self.paused_at = "approval"
            raise
        finally:
            if self.approvals is not None:
                self.approvals.pop(request.call_id, None)

    def pause(self) -> None:
        """Ask the run to pause: at its next step boundary, or at once while it waits.

        A wait for approval or a parked call (a wait for child runs, for a message) ends
        at once; the call runs again on resume.
        """
        self.pause_requested = True
        for future in (self.approvals or {}).values():
            if not future.done():
                future.set_exception(_paused_while_waiting(self.run_id))
        for held in self.holds or ():
            if not held.done():
                held.set_result(None)

    def decide(self, call_id: str, decision: ApprovalDecision) -> None:
        """Deliver a decision; one that arrives before the request waits for it."""
        future = self._decision(call_id)
        if not future.done():
            future.set_result(decision)

    def pausing(self) -> bool:
        """Whether a pause was asked for (the sink asks at each checkpoint)."""
        return self.pause_requested

    def _decision(self, call_id: str) -> asyncio.Future[ApprovalDecision]:
        if self.approvals is None:
            self.approvals = {}
        approvals = self.approvals
        future = approvals.get(call_id)
        if future is None:
            future = approvals[call_id] = asyncio.get_running_loop().create_future()
        return future


def _paused_while_waiting(run_id: str) -> RunInterrupted:
    return RunInterrupted(f"run {run_id} paused while it waited for an approval")


_PORTABLE_LIMITS = tuple(f.name for f in dataclasses.fields(Limits))
_RESULT_DATA = ("data", "output_valid", "output_errors", "detail")
"""The fields of a result kept in the runs row's `result_data` (the output has a column)."""


def result_data(result: RunResult, agent: AgentSpec) -> dict[str, Any]:
    """What the store keeps of a result besides its output text, usage and termination.

    A valid `data` is stored in the JSON form of the agent's output type (models inside
    lists and dicts included).
    """
    if result.data is None:  # the fields as `result_to_dict` writes them, without its messages
        kept: dict[str, Any] = {}
        if result.output_valid is not None:
            kept["output_valid"] = result.output_valid
        if result.output_errors:
            kept["output_errors"] = list(result.output_errors)
        if result.detail is not None:
            kept["detail"] = result.detail
        return kept
    spec = agent.output_spec
    if spec is not None and result.output_valid:
        result = dataclasses.replace(result, data=spec.dump(result.data))
    encoded = result_to_dict(result)
    return {key: encoded[key] for key in _RESULT_DATA if key in encoded}


def agent_metadata(agent: AgentSpec) -> dict[str, Any] | None:
    """The agent as JSON, when any process can rebuild it (a model name, built-in tools).

    Agents with Python tools, model objects, a Python output type (a JSON Schema travels)
    or a Python verifier (a shell command travels) can only run in a process that
    registered them; `None` says so.
    """
    if not isinstance(agent.model, str) or not all(isinstance(t, str) for t in agent.tools):
        return None
    if not all(isinstance(m, str) for m in agent.mcp):
        return None
    if agent.output_type is not None and not isinstance(agent.output_type, Mapping):
        return None
    if agent.verifier is not None and not isinstance(agent.verifier, str):
        return None
    if not all(isinstance(h, str) for h in agent.handoffs):
        return None
    data: dict[str, Any] = {
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
        "output_type": None if agent.output_type is None else dict(agent.output_type),
        "verifier": agent.verifier,
        "context": _context(agent.context),
        "settings": _settings(agent.settings),
        "approvals": {
            "tools": dict(agent.approvals.tools),
            "rules": [
                {"tool": r.tool, "decision": r.decision, "when": dict(r.when), "reason": r.reason}
                for r in agent.approvals.rules
            ],
        },
    }
    if agent.description or agent.handoffs:  # older metadata lacks them: written only when set
        data["description"] = agent.description
        data["handoffs"] = list(agent.handoffs)
    return data


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
        output_type=data.get("output_type"),
        verifier=data.get("verifier"),
        context=_context_from(data.get("context")),
        settings=_settings_from(data.get("settings") or {}),
        description=str(data.get("description") or ""),
        handoffs=tuple(str(h) for h in data.get("handoffs") or ()),
    )


def _settings(settings: ModelSettings) -> dict[str, Any]:
    data = dataclasses.asdict(settings)
    data["stop"] = list(settings.stop)
    if settings.response_format is not None:
        data["response_format"] = {
            **data["response_format"],
            "schema": dict(settings.response_format.schema),
        }
    return data


def _settings_from(data: Mapping[str, Any]) -> ModelSettings:
    fields = dict(data)
    fields["stop"] = tuple(fields.get("stop") or ())
    response_format = fields.get("response_format")
    if response_format is not None:
        fields["response_format"] = ResponseFormat(**response_format)
    return ModelSettings(**fields)


def _context(context: ContextPolicy | Mapping[str, Any] | None) -> dict[str, Any] | None:
    if context is None:
        return None
    if isinstance(context, ContextPolicy):
        return {"policy": dataclasses.asdict(context)}
    return {"overrides": dict(context)}


def _context_from(data: Mapping[str, Any] | None) -> ContextPolicy | Mapping[str, Any] | None:
    if not data:
        return None
    if "policy" in data:
        return ContextPolicy(**data["policy"])
    return dict(data.get("overrides") or {})


def _policy(data: Mapping[str, Any]) -> ApprovalPolicy:
    rules = tuple(ApprovalRule(**rule) for rule in data.get("rules") or ())
    return ApprovalPolicy(rules=rules, tools=dict(data.get("tools") or {}))
