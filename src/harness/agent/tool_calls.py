"""Running one assistant message's tool calls: policy, approval, execution, audit, events."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from harness.agent._parking import RunParking
from harness.core._frozen import builder, fast_init
from harness.core.events import (
    ApprovalDecided,
    ApprovalRequested,
    EventSink,
    RunWaiting,
    ToolCompleted,
    ToolStarted,
    summarize,
)
from harness.core.messages import ToolCall
from harness.core.usage import Limits
from harness.errors import RunInterrupted
from harness.tools.approvals import (
    ApprovalDecision,
    ApprovalHandler,
    ApprovalPolicy,
    ApprovalRequest,
    PolicyDecision,
    deny_all,
)
from harness.tools.audit import AuditLog, AuditRecord, clip_arguments, digest
from harness.tools.context import ToolContext
from harness.tools.toolset import ToolOutcome, Toolset

__all__ = ["ToolCallRunner"]


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class _Verdict:
    policy: PolicyDecision
    decision: ApprovalDecision
    at: float = field(default_factory=time.time)


class ToolCallRunner:
    """Decides, asks, runs and records the tool calls of one run.

    Calls that need approval are asked one at a time, in order; the approved calls then
    run concurrently, and their `tool` messages come back in the order of the calls.

    Args:
        toolset: The agent's tools.
        sink: Receives the run's events.
        policy: The agent's approval policy.
        approver: Asked when a call needs approval; without one, such calls are denied.
        audit: Receives one record per call, when given.
        context: The base context handed to tools (run id, workspace, result store).
        checkpoint: Commits what was recorded so far.
        parking: Parks calls that wait for something outside the run (told each step).
    """

    __slots__ = (
        "_approver",
        "_audit",
        "_checkpoint",
        "_context",
        "_parking",
        "_policy",
        "_sink",
        "_toolset",
    )

    def __init__(
        self,
        toolset: Toolset,
        sink: EventSink,
        *,
        policy: ApprovalPolicy,
        approver: ApprovalHandler | None,
        audit: AuditLog | None,
        context: ToolContext,
        checkpoint: Callable[[], Awaitable[None]] | None = None,
        parking: RunParking | None = None,
    ) -> None:
        self._toolset, self._sink, self._policy = toolset, sink, policy
        self._parking = parking
        self._approver = approver or deny_all
        self._audit, self._context = audit, context
        self._checkpoint = checkpoint or _nothing

    async def run(self, step: int, calls: Sequence[ToolCall], limits: Limits) -> list[ToolOutcome]:
        """Run every call of one assistant message; failures become `tool` messages."""
        if self._parking is not None:
            self._parking.step = step
        for call in calls:
            self._sink.emit(
                _tool_started(
                    step=step, call_id=call.id, tool=call.name, arguments=summarize(call.arguments)
                )
            )
        # Before any call runs, the assistant message (with the usage of the model call
        # that wrote it) and tool_started are durable: a crash from here on leaves a record
        # that a call may have started, and never loses what the model call cost.
        await self._checkpoint()
        invalid: list[ToolOutcome | None] = []
        verdicts: list[_Verdict] = []
        asked = False
        for call in calls:
            policy = self._policy.decide(call, self._toolset.get(call.name))
            # Nobody is asked about a call that would fail anyway.
            bad = self._toolset.check(call, limits=limits) if policy.decision == "ask" else None
            invalid.append(bad)
            verdict = _NOT_RUN if bad else await self._verdict(step, call, policy)
            verdicts.append(verdict)
            asked = asked or verdict.policy.decision == "ask"
        if asked:
            await self._checkpoint()  # decisions are durable before anything they allowed runs
        outcomes = await self._run_all(calls, verdicts, invalid, limits)
        for outcome, verdict in zip(outcomes, verdicts, strict=True):
            self._sink.emit(
                _tool_completed(
                    step=step,
                    call_id=outcome.call.id,
                    tool=outcome.call.name,
                    status=outcome.status,
                    ok=outcome.ok,
                    result=summarize(outcome.output),
                    truncated=outcome.truncated,
                    duration_s=round(outcome.duration_s, 6),
                )
            )
            self._record(outcome, verdict)
        return outcomes

    async def _run_all(
        self,
        calls: Sequence[ToolCall],
        verdicts: Sequence[_Verdict],
        invalid: Sequence[ToolOutcome | None],
        limits: Limits,
    ) -> list[ToolOutcome]:
        """Run the calls concurrently (one alone runs in this task: a task costs more).

        A pause that ends one call's park (`RunInterrupted`) stops the whole step: the
        other calls are cancelled and awaited before it goes on, so that none of them
        writes to the run after it paused.
        """
        if len(calls) == 1:
            bad = invalid[0]
            return [bad if bad else await self._execute(calls[0], verdicts[0], limits)]
        running = [
            asyncio.ensure_future(_settled(bad) if bad else self._execute(call, verdict, limits))
            for call, verdict, bad in zip(calls, verdicts, invalid, strict=True)
        ]
        try:
            return list(await asyncio.gather(*running))
        except RunInterrupted:
            for call in running:
                call.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            raise

    def repeatable(self, call: ToolCall) -> bool:
        """Whether running `call` twice is harmless (an unknown tool runs nothing at all)."""
        spec = self._toolset.get(call.name)
        return spec is None or spec.side_effects in ("none", "idempotent")

    async def _verdict(self, step: int, call: ToolCall, policy: PolicyDecision) -> _Verdict:
        if policy.decision == "auto":
            return _verdict(policy=policy, decision=_BY_POLICY)
        if policy.decision == "deny":
            reason = policy.reason or "the approval policy does not allow this call"
            denied = ApprovalDecision(approved=False, by="policy", reason=reason)
            return _Verdict(policy=policy, decision=denied)
        request = ApprovalRequest(
            run_id=self._context.run_id,
            call_id=call.id,
            tool=call.name,
            arguments=call.arguments,
            reason=policy.reason,
        )
        self._sink.emit(
            ApprovalRequested(
                step=step,
                call_id=call.id,
                tool=call.name,
                arguments=summarize(call.arguments, 1000),
                reason=policy.reason,
            )
        )
        self._sink.emit(RunWaiting(step=step, reason="approval", call_id=call.id))
        await self._checkpoint()  # the request survives a restart
        decision = await self._approver(request)
        self._sink.emit(
            ApprovalDecided(
                step=step,
                call_id=call.id,
                approved=decision.approved,
                by=decision.by,
                reason=decision.reason,
            )
        )
        return _Verdict(policy=policy, decision=decision)

    def _execute(self, call: ToolCall, verdict: _Verdict, limits: Limits) -> Awaitable[ToolOutcome]:
        """The call's execution, or its denial, to await (no coroutine of its own)."""
        if verdict.decision.approved:
            return self._toolset.execute(call, limits=limits, context=self._context)
        text = _denied_message(call, verdict.decision)
        return _settled(self._toolset.outcome(call, "denied", text, limits=limits))

    def _record(self, outcome: ToolOutcome, verdict: _Verdict) -> None:
        if self._audit is None:
            return
        call, meta = outcome.call, outcome.metadata
        self._audit.record(
            _audit_record(
                run_id=self._context.run_id,
                call_id=call.id,
                tool=call.name,
                arguments=clip_arguments(call.arguments),
                arguments_sha256=digest(call.arguments),
                decision=verdict.policy.decision,
                decided_by=verdict.decision.by,
                approved=verdict.decision.approved,
                started_at=verdict.at,
                duration_s=round(outcome.duration_s, 6),
                status=outcome.status,
                timed_out=outcome.status == "tool_timeout" or bool(meta.get("timed_out")),
                truncated=outcome.truncated,
                exit_code=meta.get("exit_code"),
                sandbox=meta.get("sandbox"),
                result_sha256=digest(outcome.output),
                result_chars=len(outcome.output),
                reason=verdict.decision.reason or verdict.policy.reason,
            )
        )


_verdict = builder(_Verdict)
_tool_started = builder(ToolStarted)
_tool_completed = builder(ToolCompleted)
_audit_record = builder(AuditRecord)

_BY_POLICY = ApprovalDecision(approved=True, by="policy")
"""The decision on a call the policy lets run on its own."""

_NOT_RUN = _Verdict(
    policy=PolicyDecision(decision="auto", source="tool"),
    decision=ApprovalDecision(approved=False, by="validation", reason="invalid call"),
)
"""The verdict of a call that failed validation: nobody is asked, nothing runs."""


async def _nothing() -> None:
    return None


async def _settled(outcome: ToolOutcome) -> ToolOutcome:
    return outcome


def _denied_message(call: ToolCall, decision: ApprovalDecision) -> str:
    reason = decision.reason or "no reason given"
    return (
        f"The call to {call.name!r} was not run: it was denied by {decision.by} ({reason}). "
        "Do not repeat the same call. Choose another way to make progress, or explain in "
        "your answer what you wanted to do and why it needs approval."
    )
