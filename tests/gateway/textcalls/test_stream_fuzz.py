"""Streaming never hands out text it takes back, whatever the text and wherever it is cut."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness.gateway.model import ReasoningDelta, TextDelta
from harness.gateway.textcalls import FORMATS, TextCallStream, parse_text
from harness.gateway.textcalls.auto import MARKERS

from .corpus import cut

PIECES = sorted(
    {
        *MARKERS,
        *(m for f in FORMATS.values() for m in (*f.markers, *f.hidden)),
        *(tag for f in FORMATS.values() for pair in f.think_tags for tag in pair),
        "</tool_call>",
        "</function>",
        "<parameter=a>",
        "</parameter>",
        "<|tool_call_end|>",
        "<|tool_call_argument_begin|>",
        "<｜tool▁sep｜>",
        "<｜tool▁call▁end｜>",
        "[ARGS]",
        "<|END_ACTION|>",
        "<|python_end|>",
        "to=functions.f",
        " to=functions.f",
        "assistant",
        "to=assistant",
        "to=container.exec",
        "analysis",
        "final",
        "commentary",
        '{"name": "f", "arguments": {"a": 1}}',
        '{"name": "g", "parameters": {}}',
        '"x"',
        "{",
        "}",
        "[",
        "]",
        "(",
        ")",
        "f(a=1)",
        "[f(a=1)]",
        "f",
        "json",
        "```",
        "\n",
        " ",
        "  ",
        "Hello",
        "world.",
        "<",
        "|",
        ",",
        ":",
    }
)
TARGETS = [*sorted(FORMATS), "auto", "auto:llama-3.1", "auto:gpt-oss", "auto:Qwen3-Coder"]


@pytest.mark.parametrize("target", TARGETS)
@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(PIECES), max_size=14),
    points=st.lists(st.integers(0, 400), max_size=10),
    forced_open=st.booleans(),
)
# Found by this test: a possible harmony token cut after "<" made "assistant" come out early.
@example(pieces=["assistant", "<", "|channel|>"], points=[10], forced_open=False)
def test_deltas_add_up_to_the_final_message(
    target: str, pieces: list[str], points: list[int], forced_open: bool
) -> None:
    format, _, family = target.partition(":")
    text = "".join(pieces)
    reader = TextCallStream(format, model_family=family or None, thinking_forced_open=forced_open)
    deltas = [
        d for chunk in cut(text, [p for p in points if p <= len(text)]) for d in reader.feed(chunk)
    ]
    rest, parsed = reader.finish()
    deltas += rest
    whole = parse_text(text, format, model_family=family or None, thinking_forced_open=forced_open)
    assert (parsed.content, parsed.reasoning, parsed.malformed) == (
        whole.content,
        whole.reasoning,
        whole.malformed,
    )
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == (parsed.content or "")
    assert "".join(d.text for d in deltas if isinstance(d, ReasoningDelta)) == (
        parsed.reasoning or ""
    )
