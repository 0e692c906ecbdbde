"""The error raised when commands cannot be sandboxed."""

from __future__ import annotations

from harness.errors import ToolError

__all__ = ["SandboxUnavailable"]


class SandboxUnavailable(ToolError):
    """No working sandbox: the command was not run (harness never falls back to running it bare).

    Args:
        message: What failed, usually with the probe's stderr.
        hint: How an operator can fix it, e.g. "install bubblewrap: apt-get install bubblewrap".
    """
