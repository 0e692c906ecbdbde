"""`run_process`: process group, deadline and bounded capture, below the bash tool."""

import time

import pytest

from harness.tools.builtin._process import run_process

BASH = ["bash", "--noprofile", "--norc", "-c"]


async def test_exit_status_and_merged_output() -> None:
    result = await run_process([*BASH, "echo out; echo err >&2; exit 7"], timeout_s=10)
    assert result.ending == "exited"
    assert result.returncode == 7
    assert result.head == b"out\nerr\n"
    assert result.tail == b""
    assert result.total_bytes == 8
    assert result.omitted_bytes == 0
    assert 0 <= result.duration_s < 10


async def test_head_and_tail_are_kept_and_the_middle_counted() -> None:
    result = await run_process(
        [*BASH, "printf 'A%.0s' {1..100}; printf 'B%.0s' {1..1000}; printf 'C%.0s' {1..50}"],
        timeout_s=10,
        head_bytes=100,
        tail_bytes=60,
    )
    assert result.head == b"A" * 100
    assert result.tail == b"B" * 10 + b"C" * 50
    assert result.total_bytes == 1150
    assert result.omitted_bytes == 990


async def test_output_cap_kills_the_group() -> None:
    started = time.monotonic()
    result = await run_process([*BASH, "yes"], timeout_s=30, max_bytes=100_000)
    assert time.monotonic() - started < 10
    assert result.ending == "output_cap"
    assert result.total_bytes >= 100_000
    assert result.returncode is not None
    assert result.returncode < 0


async def test_timeout_reports_the_ending() -> None:
    result = await run_process([*BASH, "echo started; sleep 30"], timeout_s=0.3)
    assert result.ending == "timeout"
    assert result.head == b"started\n"
    assert result.returncode == -9


async def test_missing_program_raises_oserror() -> None:
    with pytest.raises(FileNotFoundError):
        await run_process(["/nonexistent/program"], timeout_s=1)


async def test_zero_tail_keeps_only_the_head() -> None:
    result = await run_process([*BASH, "seq 1 1000"], timeout_s=10, head_bytes=10, tail_bytes=0)
    assert result.head == b"1\n2\n3\n4\n5\n"
    assert result.tail == b""
    assert result.omitted_bytes == result.total_bytes - 10
