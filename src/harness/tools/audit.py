"""The audit log: one record for every tool call, whether it ran or not."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Final, Protocol

__all__ = ["AuditLog", "AuditRecord", "JsonlAuditLog", "MemoryAuditLog", "digest"]

_ARGUMENT_CHARS = 10_000


@dataclass(frozen=True, kw_only=True)
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


class JsonlAuditLog:
    """An append-only JSON-lines file, safe to share between processes.

    Args:
        path: The file, e.g. `HARNESS_HOME/audit.jsonl`; created on the first record.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def record(self, entry: AuditRecord) -> None:
        """Append one record under an exclusive lock, so lines never interleave."""
        line = (entry.to_json() + "\n").encode("utf-8", "surrogatepass")
        fd = self._open()
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            os.write(fd, line)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Close the file; the next record opens it again."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        return self._fd

    def for_run(self, run_id: str) -> list[AuditRecord]:
        """Every record of one run, oldest first."""
        return [r for r in self._read() if r.run_id == run_id]

    def _read(self) -> Iterator[AuditRecord]:
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8") as file:
            for line in file:
                if line.strip():
                    yield AuditRecord.from_json(line)
