"""A sandboxed command runner for the bash tool: bubblewrap as an unprivileged uid.

See research/sandbox.md: bwrap (§4.2) started as host uid 65534 when the harness is root,
rlimits via `prlimit`, the wall-clock timeout and output cap enforced here, every process
killed and reaped before a call returns, and no fallback to running commands bare.

    sandbox = Sandbox()
    workspace = sandbox.make_workspace()
    result = await sandbox.run("ls -la", workspace=workspace)
"""

from harness.tools.sandbox.errors import SandboxUnavailable
from harness.tools.sandbox.limits import DEFAULT_LIMITS, SandboxLimits
from harness.tools.sandbox.probe import SandboxStatus, probe_sandbox
from harness.tools.sandbox.result import SandboxResult
from harness.tools.sandbox.sandbox import Sandbox
from harness.tools.sandbox.workspace import (
    DEFAULT_UID,
    DEFAULT_WORKSPACE_ROOT,
    make_workspace,
    prepare_workspace,
    read_workspace_file,
)

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_UID",
    "DEFAULT_WORKSPACE_ROOT",
    "Sandbox",
    "SandboxLimits",
    "SandboxResult",
    "SandboxStatus",
    "SandboxUnavailable",
    "make_workspace",
    "prepare_workspace",
    "probe_sandbox",
    "read_workspace_file",
]
