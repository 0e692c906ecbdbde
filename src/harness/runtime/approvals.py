"""Approvals that any process can give: an inbox of pending calls under `HARNESS_HOME`.

A run that needs a decision writes `approvals/RUN/CALL.request.json` and waits; `harness
approve RUN CALL` or `harness deny RUN CALL --reason …`, from any terminal, writes
`CALL.decision.json` beside it. Files are written whole and renamed into place, so a reader
never sees half a decision. (The run store will carry these once it exists.)
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.tools.approvals import ApprovalDecision, ApprovalRequest

__all__ = ["ApprovalInbox"]


class ApprovalInbox:
    """Pending approval requests and their decisions, as files under `home/approvals`.

    Args:
        home: `HARNESS_HOME`.
        poll_s: How often a waiting run looks for a decision.
    """

    def __init__(self, home: Path, *, poll_s: float = 0.2) -> None:
        self.root = home / "approvals"
        self.poll_s = poll_s

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        """Publish `request` and wait until someone decides it."""
        _write_json(self._path(request.run_id, request.call_id, "request"), asdict(request))
        decision_path = self._path(request.run_id, request.call_id, "decision")
        # The decision comes from another process, through the file system: poll for it.
        while not decision_path.exists():  # noqa: ASYNC110
            await asyncio.sleep(self.poll_s)
        data = json.loads(decision_path.read_text(encoding="utf-8"))
        for kind in ("request", "decision"):
            self._path(request.run_id, request.call_id, kind).unlink(missing_ok=True)
        return ApprovalDecision(
            approved=bool(data["approved"]), by=str(data["by"]), reason=data.get("reason")
        )

    def pending(self, run_id: str | None = None) -> list[ApprovalRequest]:
        """Requests waiting for a decision, of one run or of all."""
        pattern = f"{run_id or '*'}/*.request.json"
        found: list[ApprovalRequest] = []
        for path in sorted(self.root.glob(pattern)):
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            found.append(ApprovalRequest(**data))
        return found

    def decide(
        self, run_id: str, call_id: str, *, approved: bool, by: str, reason: str | None = None
    ) -> ApprovalRequest:
        """Record a decision for a pending request and return that request.

        Raises:
            ConfigError: No call of that run is waiting for a decision.
        """
        request_path = self._path(run_id, call_id, "request")
        if not request_path.exists():
            waiting = ", ".join(f"{r.run_id} {r.call_id}" for r in self.pending()) or "none"
            raise ConfigError(
                f"call {call_id} of run {run_id} is not waiting for approval "
                f"(waiting now: {waiting})"
            )
        request = ApprovalRequest(**json.loads(request_path.read_text(encoding="utf-8")))
        decision = ApprovalDecision(approved=approved, by=by, reason=reason)
        _write_json(self._path(run_id, call_id, "decision"), asdict(decision))
        return request

    def _path(self, run_id: str, call_id: str, kind: str) -> Path:
        for part in (run_id, call_id):
            if not part or "/" in part or part.startswith("."):
                raise ConfigError(f"not a valid run or call id: {part!r}")
        return self.root / run_id / f"{call_id}.{kind}.json"


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(json.dumps(data), encoding="utf-8")
    temporary.replace(path)
