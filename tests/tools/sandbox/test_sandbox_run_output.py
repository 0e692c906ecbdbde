"""Output of sandboxed commands: the hard cap, head and tail, bytes a model must not see."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness.tools.sandbox import Sandbox, SandboxLimits

pytestmark = pytest.mark.sandbox


async def test_endless_output_is_capped_and_killed(sandbox: Sandbox, workspace: Path) -> None:
    started = time.monotonic()
    result = await sandbox.run("yes", workspace=workspace)
    assert time.monotonic() - started < 10
    assert result.output_capped
    assert not result.timed_out
    assert (8 << 20) <= result.total_bytes < (9 << 20)
    assert result.signal is not None
    assert len(result.output) < 70_000


async def test_large_output_keeps_head_and_tail(sandbox: Sandbox, workspace: Path) -> None:
    expected = "".join(f"{n}\n" for n in range(1, 700_001)).encode()
    result = await sandbox.run("seq 1 700000", workspace=workspace)
    assert result.exit_code == 0
    assert not result.output_capped
    assert result.total_bytes == len(expected) > 4_700_000
    omitted = len(expected) - 2 * 32 * 1024
    head, tail = result.output.split(f"\n[... {omitted} bytes omitted ...]\n")
    assert head.encode() == expected[: 32 * 1024]
    assert tail.encode() == expected[-32 * 1024 :]


async def test_small_cap_from_limits(sandbox: Sandbox, workspace: Path) -> None:
    limits = SandboxLimits(output_cap_bytes=4096, head_bytes=100, tail_bytes=100)
    result = await sandbox.run("head -c 100000 /dev/zero | tr '\\0' a", workspace=workspace,
                               limits=limits)  # fmt: skip
    assert result.output_capped
    assert result.output.startswith("a" * 100 + "\n[... ")


async def test_bad_utf8_and_control_bytes_are_cleaned(sandbox: Sandbox, workspace: Path) -> None:
    raw = r"ok \xff\xfe bad \xc3\x28 nul[\x00] esc[\x1b[31mred\x1b[0m] bell\a cr\r\ncafé\n"
    script = f"printf '{raw}'"
    result = await sandbox.run(script, workspace=workspace)
    assert result.output == "ok \ufffd\ufffd bad \ufffd( nul[] esc[red] bell cr\ncafé\n"
