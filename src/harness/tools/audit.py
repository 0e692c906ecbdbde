"""The audit log: one record for every tool call, whether it ran or not."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields
from typing import Any, Final, Protocol

from harness.core._frozen import fast_init

__all__ = ["AuditLog", "AuditRecord", "MemoryAuditLog", "digest"]

_ARGUMENT_CHARS = 10_000


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class AuditRecord:
    """What happened to one tool call."""

    run_id: str
    call_id: str
    tool: str
    arguments: str
    """The arguments as the model sent them (cut at 10,000 characters)."""
    arguments_sha256: str
    decision: str
    """The policy's decision: `auto`, `ask` or `deny`."""
    decided_by: str
    """Who let the call run or refused it: `policy`, `user:NAME`, `cli`, …"""
    approved: bool
    """Whether the call was allowed to run."""
    started_at: float
    """Seconds since the epoch when the call was decided or started."""
    duration_s: float
    status: str
    """The outcome status: `ok`, `tool_error`, `tool_timeout`, `denied`, …"""
    timed_out: bool
    truncated: bool
    """Whether the model saw only part of the result."""
    exit_code: int | None = None
    """For commands: their exit code."""
    sandbox: str | None = None
    """For commands: the sandbox backend (`bwrap`, or `none` when run unsandboxed)."""
    result_sha256: str = ""
    """Digest of the full result text."""
    result_chars: int = 0
    reason: str | None = None
    """Why a call was denied, or why it needed approval."""

    def to_json(self) -> str:
        """One line of JSON."""
        data = {name: getattr(self, name) for name in _FIELDS}
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> AuditRecord:
        """Read a line written by `to_json`; unknown keys are ignored."""
        data: dict[str, Any] = json.loads(line)
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})


_FIELDS: Final = tuple(f.name for f in fields(AuditRecord))


def digest(text: str) -> str:
    """SHA-256 of `text` as hex."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def clip_arguments(arguments: str) -> str:
    """The arguments as kept in the audit log."""
    return arguments[:_ARGUMENT_CHARS]


class AuditLog(Protocol):
    """Where audit records go."""

    def record(self, entry: AuditRecord) -> None:
        """Keep one record."""
        ...


class MemoryAuditLog:
    """An audit log in memory, for tests and short-lived programs."""

    def __init__(self) -> None:
        self.records: list[AuditRecord] = []

    def record(self, entry: AuditRecord) -> None:
        """Keep one record."""
        self.records.append(entry)

    def for_run(self, run_id: str) -> list[AuditRecord]:
        """Every record of one run."""
        return [r for r in self.records if r.run_id == run_id]
