"""The `bash` tool: run a shell command, report its output and how it ended.

This first version runs commands directly on the host, in their own process group. The
sandboxed version of DESIGN.md §6 (bubblewrap, rlimits, audit log) builds on it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from harness.errors import ToolError
from harness.tools.builtin._process import ProcessResult, run_process
from harness.tools.results import truncate
from harness.tools.spec import ToolSpec

__all__ = ["bash_tool", "clean_output"]

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
) -> ToolSpec:
    """Make the `bash` tool, which runs one shell command per call.

    Each call runs `bash --noprofile --norc -c COMMAND` in a new process group with
    empty stdin. It returns when bash exits; background processes are killed then.

    Args:
        cwd: Working directory of every command; `None` uses the current directory.
        timeout: Seconds before the command and all its processes are killed.
        max_result_chars: Characters of output the model sees, start and end kept.
        env: The commands' environment. `None` passes a small one: `PATH`, `HOME`,
            the locale and a few settings that keep programs from paging or colouring,
            and no secrets from the harness's own environment.

    Returns:
        The spec of the `bash` tool (side effects `destructive`).
    """
    shell = shutil.which("bash") or "/bin/bash"
    run_env = dict(env) if env is not None else _default_env()

    async def bash(command: str) -> str:
        try:
            result = await run_process(
                [shell, "--noprofile", "--norc", "-c", command],
                timeout_s=timeout,
                cwd=cwd,
                env=run_env,
            )
        except OSError as exc:
            raise ToolError(
                f"The command could not be started: {exc.strerror or exc}.",
                hint="Check that the working directory exists.",
            ) from exc
        return _format_result(result, timeout=timeout, max_chars=max_result_chars)

    return ToolSpec.from_schema(
        name="bash",
        description=_description(cwd, timeout, max_result_chars),
        parameters=_PARAMETERS,
        function=bash,
        side_effects="destructive",
        timeout=timeout + _TIMEOUT_MARGIN_S,
        max_result_chars=max_result_chars,
    )


def _description(cwd: str | Path | None, timeout: float, max_chars: int) -> str:
    where = f"in {cwd}" if cwd is not None else "in the current working directory"
    return (
        f"Run a bash command {where} and get its output (stdout and stderr together) "
        "and exit code. Each call starts a fresh non-interactive shell: stdin is empty, "
        "and `cd`, variables and background processes do not carry over to the next "
        f"call. A command is killed after {timeout:g} s. Only the start and end of "
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


def _format_result(result: ProcessResult, *, timeout: float, max_chars: int) -> str:
    """The text the model reads: output (start and end when long), then how it ended."""
    footer = _ending(result, timeout)
    if result.omitted_bytes:
        footer = (
            f"[the command wrote {result.total_bytes:,} bytes of output; "
            "only its start and end are kept]\n" + footer
        )
    body = clean_output(result.head)
    if result.omitted_bytes:
        body += f"\n[... {result.omitted_bytes:,} bytes cut ...]\n"
    body = (body + clean_output(result.tail)).rstrip("\n") or "(no output)"
    shown, _ = truncate(body, max(0, max_chars - len(footer) - 1))
    return f"{shown}\n{footer}"


def _ending(result: ProcessResult, timeout: float) -> str:
    if result.ending == "timeout":
        return (
            f"[killed after {timeout:g} s (timeout): the command did not finish. "
            "Make it faster, give it less work, or run long jobs in smaller steps.]"
        )
    if result.ending == "output_cap":
        return (
            f"[killed: the command wrote more than {result.total_bytes:,} bytes. "
            "Redirect large output to a file and read parts of it.]"
        )
    code = result.returncode
    if code is not None and code < 0:
        return f"[terminated by signal {_signal_name(-code)}]"
    return f"[exit code {code}]"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
