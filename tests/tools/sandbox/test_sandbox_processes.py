"""Runaway processes: timeouts, CPU, memory, fork bombs, background jobs, cancellation.

Every test bounds its attempt (wall timeout, NPROC, CPU) and checks, through the `sandbox`
fixture, that no process of the sandbox uid survives. Time bounds are generous: they only
prove that nothing hangs.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.tools.sandbox import Sandbox, SandboxLimits

pytestmark = pytest.mark.sandbox


async def test_a_command_past_its_timeout_is_killed(sandbox: Sandbox, workspace: Path) -> None:
    started = time.monotonic()
    result = await sandbox.run(
        "echo before; sleep 100; echo after", workspace=workspace, limits=SandboxLimits(wall_s=1)
    )
    assert time.monotonic() - started < 6
    assert result.timed_out
    assert (result.exit_code, result.signal) == (None, signal.SIGKILL)
    assert result.output == "before\n"
    assert 1 <= result.duration_s < 6


async def test_cpu_spin_gets_sigxcpu(sandbox: Sandbox, workspace: Path) -> None:
    limits = SandboxLimits(cpu_s=1, wall_s=20)
    result = await sandbox.run("python3 -c 'while True: pass'", workspace=workspace, limits=limits)
    assert not result.timed_out
    assert (result.exit_code, result.signal) == (128 + signal.SIGXCPU, signal.SIGXCPU)


async def test_memory_is_capped_by_rlimit_as(sandbox: Sandbox, workspace: Path) -> None:
    limits = SandboxLimits(as_bytes=1 << 30, wall_s=20)
    result = await sandbox.run(
        "python3 -c 'bytearray(3 * 1024**3)'", workspace=workspace, limits=limits
    )
    assert "MemoryError" in result.output
    assert result.exit_code == 1


async def test_fork_bomb_is_contained(sandbox: Sandbox, workspace: Path) -> None:
    limits = SandboxLimits(nproc=64, wall_s=6)
    started = time.monotonic()
    result = await sandbox.run(
        "b(){ b | b & }; b; sleep 1; echo survived", workspace=workspace, limits=limits
    )
    assert time.monotonic() - started < 15
    assert "Resource temporarily unavailable" in result.output  # NPROC was hit


@pytest.mark.parametrize(
    "script",
    [
        "sleep 300 &",
        "nohup sleep 300 >/dev/null 2>&1 &",
        "setsid sleep 300 >/dev/null 2>&1 &",
        "(sleep 300 >/dev/null 2>&1 &) &",
        "sleep 300 >/dev/null 2>&1 & disown",
        "python3 -c 'import os, time\nif os.fork() == 0:\n os.setsid()\n "
        "if os.fork() == 0: time.sleep(300)'",
    ],
    ids=["ampersand", "nohup", "setsid", "double-fork", "disown", "daemonize"],
)
async def test_background_processes_do_not_survive(
    sandbox: Sandbox, workspace: Path, script: str, leftovers: Callable[[], list[str]]
) -> None:
    started = time.monotonic()
    result = await sandbox.run(f"{script}\necho returned", workspace=workspace)
    assert time.monotonic() - started < 5
    assert result.output.endswith("returned\n")
    assert leftovers() == []


async def test_a_background_child_holding_stdout_does_not_hold_the_call(
    sandbox: Sandbox, workspace: Path
) -> None:
    started = time.monotonic()
    result = await sandbox.run("sleep 305 & echo started", workspace=workspace)
    assert time.monotonic() - started < 5
    assert (result.exit_code, result.output, result.timed_out) == (0, "started\n", False)


async def test_cancelling_the_call_kills_the_sandbox(
    sandbox: Sandbox, workspace: Path, leftovers: Callable[[], list[str]]
) -> None:
    marker = workspace / "started"
    task = asyncio.create_task(sandbox.run("touch started; exec sleep 100", workspace=workspace))
    while not marker.exists():  # wait until the command runs inside the sandbox
        assert not task.done(), task.result()
        await asyncio.sleep(0.01)
    assert any("sleep" in line for line in leftovers())  # it runs, as the sandbox uid
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 5
    assert leftovers() == []


async def test_concurrent_calls_are_isolated(sandbox: Sandbox, workspace: Path) -> None:
    results = await asyncio.gather(
        *(sandbox.run(f"echo {n} > n{n}; cat n{n}", workspace=workspace) for n in range(4))
    )
    assert [result.output for result in results] == [f"{n}\n" for n in range(4)]


async def test_exit_status_is_reported(sandbox: Sandbox, workspace: Path) -> None:
    result = await sandbox.run("echo out; echo err >&2; exit 3", workspace=workspace)
    assert (result.exit_code, result.signal, result.timed_out) == (3, None, False)
    assert result.output == "out\nerr\n"
    assert result.backend == "bwrap"
    assert not result.network
