"""What a person sees of completion checks and context compactions."""

import pytest

from harness.cli.render import LiveRenderer
from harness.core import RunEvent, Usage
from harness.core.events import (
    CompletionChecked,
    ContextCompacted,
    EventPayload,
    ModelResponded,
    TextToolCalls,
)


def shown(capsys: pytest.CaptureFixture[str], payload: EventPayload) -> str:
    LiveRenderer()(RunEvent(run_id="run_1", seq=1, ts=0.0, payload=payload))
    return " ".join(capsys.readouterr().out.split())


def test_checks_show_what_failed(capsys: pytest.CaptureFixture[str]) -> None:
    failed = CompletionChecked(step=1, check="output_type", passed=False, errors=("$.a: x",))
    assert shown(capsys, failed) == "✗ output type failed $.a: x"
    check = CompletionChecked(step=1, check="verifier", passed=False, feedback="no file")
    assert shown(capsys, check) == "✗ completion check failed no file"
    passed = CompletionChecked(step=1, check="verifier", passed=True, feedback="")
    assert shown(capsys, passed) == "✓ completion check passed"


def test_a_compaction_shows_its_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    compacted = ContextCompacted(
        step=3,
        tier="summarize",
        tokens_before=5200,
        tokens_after=2100,
        messages_removed=12,
        messages_cut=0,
        summary="so far",
        fallback=None,
        usage=Usage(),
    )
    line = shown(capsys, compacted)
    assert line == "context summarize: 5200 → 2100 tokens, 12 messages not sent"


def responded(from_text: TextToolCalls | None) -> ModelResponded:
    return ModelResponded(
        step=1,
        finish_reason="tool_calls",
        content="",
        usage=Usage(input_tokens=9),
        tool_calls=(),
        tool_calls_from_text=from_text,
        duration_s=0.5,
    )


def test_calls_read_from_the_text_are_noted(capsys: pytest.CaptureFixture[str]) -> None:
    native = shown(capsys, responded(None))
    assert native == "model: tool_calls · 9 in / 0 out tokens · 0.50 s"
    line = shown(capsys, responded(TextToolCalls(format="hermes", calls=1, malformed=0)))
    assert (
        line == "model: tool_calls · 9 in / 0 out tokens · 0.50 s · calls read from text (hermes)"
    )
