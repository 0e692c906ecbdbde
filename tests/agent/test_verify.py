"""Completion checks: callables and shell commands in the sandbox, and what the model is told."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from harness.agent.verify import (
    ShellVerifier,
    VerifyContext,
    VerifyResult,
    feedback_message,
    run_verifier,
)
from harness.tools.sandbox import Sandbox

CTX = VerifyContext(run_id="run_v", step=3)


# --- Python callables -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("returned", "passed", "feedback"),
    [
        (True, True, ""),
        (None, True, ""),
        ("", True, ""),
        (VerifyResult(passed=True, feedback="all 12 tests pass"), True, "all 12 tests pass"),
        (False, False, "The check rejected the answer."),
        ("the total is missing", False, "the total is missing"),
        (VerifyResult(passed=False, feedback="3 of 12 fail"), False, "3 of 12 fail"),
    ],
)
async def test_sync_callable_verdicts(returned: object, passed: bool, feedback: str) -> None:
    result = await run_verifier(lambda answer, ctx: returned, "42", CTX)
    assert result == VerifyResult(passed=passed, feedback=feedback)


async def test_callable_gets_the_answer_and_the_context() -> None:
    seen: list[tuple[str, VerifyContext]] = []

    def check(answer: str, ctx: VerifyContext) -> bool:
        seen.append((answer, ctx))
        return answer == "42"

    assert (await run_verifier(check, "42", CTX)).passed
    assert not (await run_verifier(check, "41", CTX)).passed
    assert seen == [("42", CTX), ("41", CTX)]


async def test_async_callable() -> None:
    async def check(answer: str, ctx: VerifyContext) -> str | None:
        await asyncio.sleep(0)
        return None if answer.endswith("done") else "say done"

    assert (await run_verifier(check, "all done", CTX)).passed
    failed = await run_verifier(check, "working", CTX)
    assert failed == VerifyResult(passed=False, feedback="say done")


async def test_callable_object_returning_an_awaitable() -> None:
    class Check:
        async def __call__(self, answer: str, ctx: VerifyContext) -> bool:
            return answer == "yes"

    assert (await run_verifier(Check(), "yes", CTX)).passed
    assert not (await run_verifier(Check(), "no", CTX)).passed


async def test_assertion_fails_the_check_with_its_message() -> None:
    def check(answer: str, ctx: VerifyContext) -> None:
        assert "total" in answer, "the answer must state the total"

    result = await run_verifier(check, "42", CTX)
    assert not result.passed
    assert result.error is None
    # pytest's assertion rewriting adds its own explanation after the message
    assert result.feedback.startswith("the answer must state the total")
    bare = await run_verifier(lambda a, c: _fail_bare(), "42", CTX)
    assert bare.feedback == "An assertion of the check failed."


def _fail_bare() -> None:
    raise AssertionError


async def test_a_raising_callable_is_a_failed_check_not_a_crash() -> None:
    def broken(answer: str, ctx: VerifyContext) -> bool:
        raise KeyError("config")

    result = await run_verifier(broken, "42", CTX)
    assert not result.passed
    assert result.error is not None
    assert "raised KeyError: 'config'" in result.error
    assert "broken" in result.error


async def test_an_async_raising_callable() -> None:
    async def broken(answer: str, ctx: VerifyContext) -> bool:
        raise RuntimeError("db down")

    result = await run_verifier(broken, "42", CTX)
    assert result.error is not None
    assert "RuntimeError: db down" in result.error


async def test_a_slow_callable_times_out_as_a_failed_check() -> None:
    async def hangs(answer: str, ctx: VerifyContext) -> bool:
        await asyncio.Event().wait()
        return True

    result = await run_verifier(hangs, "42", CTX, timeout_s=0.05)
    assert not result.passed
    assert result.error is not None
    assert "did not finish within 0.05 s" in result.error


async def test_a_timeout_error_of_the_check_itself_is_a_crash_not_our_timeout() -> None:
    async def flaky(answer: str, ctx: VerifyContext) -> bool:
        raise TimeoutError("the test server did not answer")

    result = await run_verifier(flaky, "42", CTX, timeout_s=None)
    assert result.error is not None
    assert "raised TimeoutError: the test server did not answer" in result.error


async def test_a_sync_callable_runs_off_the_event_loop() -> None:
    released = threading.Event()

    def waits(answer: str, ctx: VerifyContext) -> bool:
        return released.wait(timeout=30)

    async def release() -> None:
        await asyncio.sleep(0)
        released.set()

    # On the loop's own thread, `waits` would keep `release` from ever running.
    result, _ = await asyncio.gather(run_verifier(waits, "42", CTX), release())
    assert result.passed


async def test_a_wrong_return_type_is_a_clear_error() -> None:
    result = await run_verifier(lambda a, c: 3, "42", CTX)
    assert not result.passed
    assert result.error is not None
    assert "returned int" in result.error
    assert "VerifyResult, a bool, a string" in result.error


# --- what the model reads -------------------------------------------------------------------


def test_feedback_message_for_a_failure() -> None:
    text = feedback_message(VerifyResult(passed=False, feedback="2 tests fail: test_a, test_b"))
    assert "did not pass the completion check" in text
    assert "not done yet" in text
    assert "2 tests fail: test_a, test_b" in text
    assert text.endswith("then give your final answer again.")


def test_feedback_message_for_a_failure_without_words() -> None:
    text = feedback_message(VerifyResult(passed=False))
    assert "rejected the answer without saying why" in text


def test_feedback_message_for_a_broken_check() -> None:
    text = feedback_message(VerifyResult(passed=False, error="the check 'x' raised KeyError"))
    assert "could not be checked: the check 'x' raised KeyError." in text
    assert "give your final answer again" in text


def test_feedback_message_for_a_pass() -> None:
    assert feedback_message(VerifyResult(passed=True)) == "The completion check passed."


# --- shell commands in the sandbox ----------------------------------------------------------


async def test_shell_check_passes_on_exit_code_zero(sandbox: Sandbox, workspace: Path) -> None:
    (workspace / "report.md").write_text("# Report\n")
    verifier = ShellVerifier('test -s report.md && echo "ok: $HARNESS_RUN_ID"', sandbox=sandbox)
    ctx = VerifyContext(run_id="run_s1", workspace=workspace)
    result = await run_verifier(verifier, "see report.md", ctx)
    assert result.passed
    assert result.error is None
    assert result.feedback == "ok: run_s1\n[exit code 0]"


async def test_shell_check_sees_the_answer(sandbox: Sandbox, workspace: Path) -> None:
    verifier = ShellVerifier('test "$HARNESS_ANSWER" = "The total is 42."', sandbox=sandbox)
    ctx = VerifyContext(workspace=workspace)
    assert (await run_verifier(verifier, "The total is 42.", ctx)).passed
    assert not (await run_verifier(verifier, "The total is 41.", ctx)).passed


async def test_shell_check_fails_with_its_output(sandbox: Sandbox, workspace: Path) -> None:
    command = "echo 'FAILED test_total'; echo 'expected 42' >&2; exit 2"
    result = await run_verifier(
        ShellVerifier(command, sandbox=sandbox), "41", VerifyContext(workspace=workspace)
    )
    assert not result.passed
    assert result.error is None
    assert result.feedback == (
        f"The check `{command}` failed. Its output:\nFAILED test_total\nexpected 42\n[exit code 2]"
    )
    assert "FAILED test_total" in feedback_message(result)


async def test_shell_check_that_fails_silently_says_so(sandbox: Sandbox, workspace: Path) -> None:
    result = await run_verifier(
        ShellVerifier("grep -q TODO notes.txt", sandbox=sandbox),
        "done",
        VerifyContext(workspace=workspace),
    )
    assert not result.passed
    assert "[exit code 2" in result.feedback  # grep: no such file
    (workspace / "notes.txt").write_text("nothing left\n")
    silent = await run_verifier(
        ShellVerifier("grep -q TODO notes.txt", sandbox=sandbox),
        "done",
        VerifyContext(workspace=workspace),
    )
    assert "(no output)\n[exit code 1: it failed without printing anything" in silent.feedback


async def test_shell_check_long_output_keeps_head_and_tail(
    sandbox: Sandbox, workspace: Path
) -> None:
    verifier = ShellVerifier("seq 1 20000; exit 1", sandbox=sandbox, max_feedback_chars=500)
    result = await run_verifier(verifier, "x", VerifyContext(workspace=workspace))
    assert not result.passed
    output = result.feedback.split("Its output:\n", 1)[1]
    assert len(output) <= 500
    assert output.startswith("1\n2\n3\n")
    assert output.endswith("19999\n20000\n[exit code 1]")
    assert "characters cut" in output


async def test_shell_check_timeout_is_a_failed_check(sandbox: Sandbox, workspace: Path) -> None:
    verifier = ShellVerifier("echo started; sleep 60", timeout_s=1, sandbox=sandbox)
    result = await run_verifier(verifier, "x", VerifyContext(workspace=workspace))
    assert not result.passed
    assert "started" in result.feedback
    assert "[killed after 1 s (timeout)" in result.feedback


async def test_a_long_answer_is_cut_for_the_environment(sandbox: Sandbox, workspace: Path) -> None:
    command = 'test ${#HARNESS_ANSWER} -eq 100000 && test "$HARNESS_ANSWER_TRUNCATED" = 1'
    verifier = ShellVerifier(command, sandbox=sandbox)
    result = await run_verifier(verifier, "a" * 150_000, VerifyContext(workspace=workspace))
    assert result.passed, result.feedback


async def test_an_answer_with_a_nul_byte_still_runs(sandbox: Sandbox, workspace: Path) -> None:
    verifier = ShellVerifier('test "$HARNESS_ANSWER" = ab', sandbox=sandbox)
    assert (await run_verifier(verifier, "a\0b", VerifyContext(workspace=workspace))).passed


async def test_extra_environment(sandbox: Sandbox, workspace: Path) -> None:
    verifier = ShellVerifier('test "$MODE" = strict', sandbox=sandbox, env={"MODE": "strict"})
    assert (await run_verifier(verifier, "x", VerifyContext(workspace=workspace))).passed


async def test_without_a_sandbox_the_check_cannot_run(tmp_path: Path) -> None:
    missing = Sandbox(bwrap=str(tmp_path / "no-bwrap"))
    verifier = ShellVerifier("true", sandbox=missing)
    result = await run_verifier(verifier, "x", VerifyContext(workspace=tmp_path))
    assert not result.passed
    assert result.error is not None
    assert result.error.startswith("the check command could not run: no sandbox available")
    assert "could not be checked" in feedback_message(result)


async def test_only_the_check_itself_may_allow_the_host(tmp_path: Path) -> None:
    missing = Sandbox(bwrap=str(tmp_path / "no-bwrap"))
    (tmp_path / "built.txt").write_text("yes\n")
    command = 'grep -q yes built.txt && test "$HARNESS_ANSWER" = x'
    ctx = VerifyContext(workspace=tmp_path, allow_unsandboxed=True)  # the agent's choice
    refused = await run_verifier(ShellVerifier(command, sandbox=missing), "x", ctx)
    assert not refused.passed
    assert refused.error is not None
    assert "no sandbox available" in refused.error
    allowed = ShellVerifier(command, sandbox=missing, allow_unsandboxed=True)
    result = await run_verifier(allowed, "x", VerifyContext(workspace=tmp_path))
    assert result.passed, result.feedback
    assert "WITHOUT a sandbox" in result.feedback
