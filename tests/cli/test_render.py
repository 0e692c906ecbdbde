"""What a person sees of completion checks and context compactions."""

import pytest

from harness.cli.render import LiveRenderer
from harness.core import RunEvent


def shown(capsys: pytest.CaptureFixture[str], kind: str, **payload: object) -> str:
    LiveRenderer()(RunEvent(run_id="run_1", seq=1, ts=0.0, type=kind, payload=payload))  # type: ignore[arg-type]
    return " ".join(capsys.readouterr().out.split())


def test_checks_show_what_failed(capsys: pytest.CaptureFixture[str]) -> None:
    failed = shown(
        capsys, "completion_checked", check="output_type", passed=False, errors=["$.a: x"]
    )
    assert failed == "✗ output type failed $.a: x"
    check = shown(capsys, "completion_checked", check="verifier", passed=False, feedback="no file")
    assert check == "✗ completion check failed no file"
    assert shown(capsys, "completion_checked", check="verifier", passed=True) == (
        "✓ completion check passed"
    )


def test_a_compaction_shows_its_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    line = shown(
        capsys,
        "context_compacted",
        tier="summarize",
        tokens_before=5200,
        tokens_after=2100,
        messages_removed=12,
    )
    assert line == "context summarize: 5200 → 2100 tokens, 12 messages not sent"


def test_calls_read_from_the_text_are_noted(capsys: pytest.CaptureFixture[str]) -> None:
    common = {"finish_reason": "tool_calls", "usage": {"input_tokens": 9}, "duration_s": 0.5}
    native = shown(capsys, "model_responded", **common, tool_calls_from_text=None)
    assert native == "model: tool_calls · 9 in / 0 out tokens · 0.50 s"
    text = {"format": "hermes", "calls": 1, "malformed": 0}
    line = shown(capsys, "model_responded", **common, tool_calls_from_text=text)
    assert (
        line == "model: tool_calls · 9 in / 0 out tokens · 0.50 s · calls read from text (hermes)"
    )
