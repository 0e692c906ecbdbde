"""The `bash` tool: run a shell command in the sandbox, report its output and how it ended.

By default every command runs in the bubblewrap sandbox (`harness.tools.sandbox`): no
network, a read-only system, the workspace as the only writable place, rlimits, and every
process killed when the call ends. Without a working sandbox the tool refuses, and says how
to fix that, unless the user explicitly allows unsandboxed commands; each of those then
needs approval.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final

from harness.errors import ConfigError, ToolError
from harness.tools.builtin._fs import private_parts
from harness.tools.builtin._process import Ending, ProcessResult, run_process
from harness.tools.context import ToolContext, ToolResult
from harness.tools.results import NO_OUTPUT
from harness.tools.sandbox import Sandbox, SandboxLimits, SandboxResult
from harness.tools.spec import ToolSpec
from harness.tools.workspaces import allowed_workspace

__all__ = ["WARNING_UNSANDBOXED", "bash_tool", "clean_output", "run_bash"]

_TIMEOUT_MARGIN_S: Final = 10.0
"""Extra time the tool call gets beyond the command's own timeout, so that the tool
kills the command and reports it, rather than being cancelled from outside."""

_INHERITED_ENV: Final = (
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
)  # fmt: skip
_QUIET_ENV: Final = {"TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "NO_COLOR": "1"}
"""Keep programs from paging or colouring output no one sees on a terminal."""

_ESCAPE_SEQUENCE: Final = re.compile(  # CSI, OSC (title etc.), and the short escapes
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[ -/]*[0-~])"
)
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

_PARAMETERS: Final = {
    "type": "object",
    "properties": {
        "command": {
            "type": "string",
            "minLength": 1,
            "description": "The bash command (or script) to run, e.g. `ls -la src`.",
        }
    },
    "required": ["command"],
    "additionalProperties": False,
}


def bash_tool(
    *,
    cwd: str | Path | None = None,
    timeout: float = 120.0,
    max_result_chars: int = 4000,
    env: Mapping[str, str] | None = None,
    sandbox: Sandbox | None = None,
    network: bool = False,
    allow_unsandboxed: bool = False,
    limits: SandboxLimits | None = None,
    private: Sequence[str | Path] = (),
) -> ToolSpec:
    """Make the `bash` tool, which runs one shell command per call, sandboxed.

    Each call runs `bash --noprofile --norc -c COMMAND` with empty stdin and returns when
    the command and everything it started have ended; background processes are killed.

    Args:
        cwd: The workspace, the commands' working directory; `None` is the current
            directory. It must pass the workspace rule (`harness.tools.workspaces`). As
            root, a directory the sandbox uid does not own is given to commands through an
            idmapped mount: what they write belongs to the directory's owner.
        timeout: Seconds before the command and all its processes are killed.
        max_result_chars: Characters of output the model sees, start and end kept.
        env: The commands' environment. `None` passes a small one with no secrets from
            the harness's own environment.
        sandbox: The sandbox to run in; `None` makes a default `Sandbox()`.
        network: Give commands the host's network. Calls then need approval by default.
        allow_unsandboxed: Run commands on the host when no sandbox works here, instead of
            refusing. Calls then need approval.
        limits: Resource limits inside the sandbox; `timeout` sets their wall clock.
        private: Directories inside the workspace that commands must not see, such as
            harness's own home: an empty read-only directory stands in for each.

    Returns:
        The spec of the `bash` tool (side effects `destructive`).

    Raises:
        WorkspaceRefused: `cwd` breaks the workspace rule.
    """
    workspace = allowed_workspace(cwd if cwd is not None else Path.cwd())
    runner = _Runner(
        cwd=workspace,
        hidden=tuple("/".join(parts) for parts in private_parts(workspace, private)),
        timeout=timeout,
        env=dict(env) if env is not None else None,
        sandbox=sandbox or Sandbox(),
        network=network,
        allow_unsandboxed=allow_unsandboxed,
        limits=replace(limits or SandboxLimits(), wall_s=timeout),
    )
    spec = ToolSpec.from_schema(
        name="bash",
        description=_description(cwd, timeout, max_result_chars, network),
        parameters=_PARAMETERS,
        function=runner.bash,
        side_effects="destructive",
        timeout=timeout,
        approval="ask" if network or allow_unsandboxed else "auto",
        max_result_chars=max_result_chars,
    )
    return replace(spec, context_param="context", grace_s=_TIMEOUT_MARGIN_S)


async def run_bash(
    command: str,
    *,
    cwd: str | Path | None = None,
    timeout_s: float = 120.0,
    extra_env: Mapping[str, str] | None = None,
    sandbox: Sandbox | None = None,
    network: bool = False,
    allow_unsandboxed: bool = False,
    limits: SandboxLimits | None = None,
) -> ToolResult:
    """Run one command exactly as the `bash` tool does, outside any toolset.

    For harness code that runs commands of its own in an agent's workspace, such as a
    completion check: the same sandbox, limits, output capture and report.

    Args:
        command: The bash command (or script).
        cwd: The workspace; `None` is the current directory.
        timeout_s: Seconds before the command and all its processes are killed.
        extra_env: Variables added to the commands' usual small environment.
        sandbox: The sandbox to run in; `None` makes a default `Sandbox()`.
        network: Give the command the host's network.
        allow_unsandboxed: Run on the host when no sandbox works here, instead of refusing.
        limits: Resource limits inside the sandbox; `timeout_s` sets their wall clock.

    Returns:
        The report the model would read (output, then how the command ended) and its
        metadata (`exit_code`, `timed_out`, `sandbox`, ...).

    Raises:
        ToolError: The command could not run: no sandbox (see `SandboxUnavailable`), a
            workspace the sandbox cannot use, or a command that cannot be passed.
    """
    runner = _Runner(
        cwd=Path(cwd) if cwd is not None else None,
        timeout=timeout_s,
        env=None,
        extra_env=dict(extra_env or {}),
        sandbox=sandbox or Sandbox(),
        network=network,
        allow_unsandboxed=allow_unsandboxed,
        limits=replace(limits or SandboxLimits(), wall_s=timeout_s),
    )
    return await runner.bash(command)


@dataclass(frozen=True, kw_only=True)
class _Runner:
    cwd: Path | None
    timeout: float
    env: dict[str, str] | None
    sandbox: Sandbox
    network: bool
    allow_unsandboxed: bool
    limits: SandboxLimits
    extra_env: dict[str, str] = field(default_factory=dict[str, str])
    hidden: tuple[str, ...] = ()

    async def bash(self, command: str, context: ToolContext | None = None) -> ToolResult:
        deadline = context.timeout_s if context is not None else None
        if deadline is not None and deadline < self.timeout:  # Limits.tool_timeout is shorter
            shorter = replace(self, timeout=deadline, limits=replace(self.limits, wall_s=deadline))
            return await shorter.bash(command)
        workspace = self.cwd or Path.cwd()  # run_bash resolves None here, bash_tool at its making
        if self.allow_unsandboxed and not self.sandbox.probe().available:
            return await self._unsandboxed(command, workspace)
        try:
            result = await self.sandbox.run(
                command,
                workspace=workspace,
                limits=self.limits,
                network=self.network,
                env={**(self.env or {}), **self.extra_env},
                hidden=self.hidden,
            )
        except ConfigError as exc:
            raise ToolError(
                f"The sandbox cannot use the workspace {workspace}: {exc}",
                hint="This needs the operator: run harness in a project directory of their "
                "own, or give the agent a workspace made with `harness workspace new`.",
            ) from exc
        return _sandboxed_report(result, self.timeout)

    async def _unsandboxed(self, command: str, workspace: Path) -> ToolResult:
        shell = shutil.which("bash") or "/bin/bash"
        try:
            result = await run_process(
                [shell, "--noprofile", "--norc", "-c", command],
                timeout_s=self.timeout,
                cwd=workspace,
                env={**(self.env if self.env is not None else _default_env()), **self.extra_env},
            )
        except OSError as exc:
            raise ToolError(
                f"The command could not be started: {exc.strerror or exc}.",
                hint="Check that the working directory exists.",
            ) from exc
        body = _host_body(result)
        footer = _ending(
            result.ending,
            result.returncode,
            self.timeout,
            result.total_bytes,
            silent=not body.strip(),
        )
        if result.omitted_bytes:
            footer = (
                f"[the command wrote {result.total_bytes:,} bytes of output; "
                f"only its start and end are kept]\n{footer}"
            )
        text = _report(body, footer)
        return ToolResult(
            text=f"{text}\n{WARNING_UNSANDBOXED}",
            metadata={
                "exit_code": result.returncode,
                "timed_out": result.ending == "timeout",
                "timeout_s": self.timeout,
                "sandbox": "none",
                "output_bytes": result.total_bytes,
            },
        )


WARNING_UNSANDBOXED: Final = "[warning: this command ran WITHOUT a sandbox, on the host]"


def _description(cwd: str | Path | None, timeout: float, max_chars: int, network: bool) -> str:
    where = f"in {cwd}" if cwd is not None else "in the current working directory"
    net = "has network access" if network else "has no network access"
    return (
        f"Run a bash command {where} and get its output (stdout and stderr together) "
        "and exit code. Each call starts a fresh non-interactive shell in a sandbox that "
        f"{net}; only the working directory and /tmp are writable, and /tmp is emptied "
        "after each call. `cd`, variables and background processes do not carry over to "
        f"the next call. A command is killed after {timeout:g} s. Only the start and end of "
        f"output longer than {max_chars:,} characters are shown, so for large output "
        "write it to a file and look at parts of it with grep, head, tail or sed -n."
    )


def _default_env() -> dict[str, str]:
    env = {name: os.environ[name] for name in _INHERITED_ENV if name in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    return env | _QUIET_ENV


def clean_output(data: bytes) -> str:
    """Decode command output for the model: UTF-8, no escape sequences or control bytes.

    Args:
        data: Raw output bytes.

    Returns:
        The text; invalid UTF-8 becomes U+FFFD, and control characters other than
        newline and tab are removed.
    """
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    return _CONTROL.sub("", _ESCAPE_SEQUENCE.sub("", text))


def _host_body(result: ProcessResult) -> str:
    body = clean_output(result.head)
    if result.omitted_bytes:
        body += f"\n[... {result.omitted_bytes:,} bytes cut ...]\n"
    return body + clean_output(result.tail)


def _sandboxed_report(result: SandboxResult, timeout: float) -> ToolResult:
    ending: Ending = (
        "timeout" if result.timed_out else "output_cap" if result.output_capped else "exited"
    )
    code = result.exit_code if result.signal is None else -result.signal
    footer = _ending(ending, code, timeout, result.total_bytes, silent=not result.output.strip())
    text = _report(result.output, footer)
    return ToolResult(
        text=text,
        metadata={
            "exit_code": result.exit_code,
            "signal": result.signal,
            "timed_out": result.timed_out,
            "timeout_s": timeout,
            "sandbox": result.backend,
            "network": result.network,
            "output_bytes": result.total_bytes,
            "output_capped": result.output_capped,
        },
    )


def _report(body: str, footer: str) -> str:
    """The text the model reads: all captured output, then how the command ended."""
    return f"{body.rstrip(chr(10)) or NO_OUTPUT}\n{footer}"


_EXIT_CODES: Final = {
    126: "a program was found but cannot be executed: make it executable with chmod +x, "
    "or run it through its interpreter, e.g. `bash script.sh` or `python3 tool.py`",
    127: "a command was not found: check its spelling with `command -v NAME`; only "
    "programs installed on this machine are there, so use another one if it is missing",
}
_SIGNALS: Final = {
    "SIGKILL": "killed from outside, usually for using too much CPU time or memory; give it "
    "less work per call",
    "SIGXCPU": "it used up its CPU-time limit; give it less work per call",
    "SIGSEGV": "the program crashed (segmentation fault)",
    "SIGABRT": "the program aborted itself; its output may say why",
}
_SILENT_FAILURE: Final = (
    "it failed without printing anything. Exit code 1 from grep means no line matched, "
    "from test or [ ] that the condition is false; to see which part failed, put "
    "`set -x;` in front of the command or print intermediate results"
)


def _ending(
    ending: Ending, code: int | None, timeout: float, total_bytes: int, *, silent: bool = False
) -> str:
    """How the command ended, and for a failure what it likely means and what to try."""
    if ending == "timeout":
        return (
            f"[killed after {timeout:g} s (timeout): the command did not finish. "
            "Make it faster, give it less work, or run long jobs in smaller steps.]"
        )
    if ending == "output_cap":
        return (
            f"[killed: the command wrote more than {total_bytes:,} bytes. "
            "Redirect large output to a file and read parts of it.]"
        )
    if code is not None and code < 0:
        name = _signal_name(-code)
        meaning = _SIGNALS.get(name)
        return (
            f"[terminated by signal {name}: {meaning}]"
            if meaning
            else f"[terminated by signal {name}]"
        )
    meaning = _EXIT_CODES.get(code or 0) or (_SILENT_FAILURE if silent and code else None)
    return f"[exit code {code}: {meaning}]" if meaning else f"[exit code {code}]"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
