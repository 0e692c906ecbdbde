"""Streaming: text comes out as soon as it cannot be call markup, never earlier."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from harness.gateway.model import ReasoningDelta, TextDelta
from harness.gateway.textcalls import TextCallStream


def feed(reader: TextCallStream, *chunks: str) -> list[tuple[str, str]]:
    """What each chunk released, as (answer, reasoning) text."""
    released: list[tuple[str, str]] = []
    for chunk in chunks:
        deltas = reader.feed(chunk)
        released.append(_texts(deltas))
    return released


def _texts(deltas: Sequence[TextDelta | ReasoningDelta]) -> tuple[str, str]:
    answer = "".join(d.text for d in deltas if isinstance(d, TextDelta))
    reasoning = "".join(d.text for d in deltas if isinstance(d, ReasoningDelta))
    return answer, reasoning


def test_answer_before_a_call_streams_and_a_split_marker_is_held_back() -> None:
    reader = TextCallStream("hermes")
    released = feed(
        reader, "Sure, let me ", "check.<tool_", 'call>{"name": "f", ', '"arguments": {}}'
    )
    assert released == [("Sure, let me", ""), (" check.", ""), ("", ""), ("", "")]
    rest, parsed = reader.finish()
    assert rest == []
    assert [c.name for c in parsed.calls] == ["f"]


def test_a_lone_angle_bracket_is_released_once_it_is_not_a_marker() -> None:
    reader = TextCallStream("hermes")
    assert feed(reader, "if a <", " b then") == [("if a", ""), (" < b then", "")]


def test_reasoning_streams_while_it_is_written() -> None:
    reader = TextCallStream("hermes")
    released = feed(reader, "<thi", "nk>Let me", " think.</think>", "Answer")
    assert released == [("", ""), ("", "Let me"), ("", " think."), ("Answer", "")]


def test_reasoning_after_a_call_marker_waits_for_the_closing_tag() -> None:
    reader = TextCallStream("kimi_k2")
    released = feed(reader, "<think>plan", "<|tool_call_begin|>functions.f:0", " more</think>")
    assert released == [("", "plan"), ("", ""), ("", "<|tool_call_begin|>functions.f:0 more")]


def test_harmony_streams_analysis_as_reasoning_and_final_as_answer() -> None:
    reader = TextCallStream("harmony")
    released = feed(
        reader,
        "<|channel|>analysis<|message|>Thinking",
        " hard<|end|><|start|>assistant<|channel|>final<|message|>It is",
        " sunny<|",
        "return|>",
    )
    assert released == [("", "Thinking"), ("It is", " hard"), (" sunny", ""), ("", "")]


def test_harmony_call_bodies_never_stream() -> None:
    reader = TextCallStream("harmony")
    released = feed(
        reader, "<|start|>assistant to=functions.f<|channel|>commentary<|message|>{", '"a": 1}'
    )
    assert released == [("", ""), ("", "")]


def test_llama3_json_holds_everything_until_the_end() -> None:
    """Prose around a Llama 3 call is dropped, so no prose is settled before the end."""
    reader = TextCallStream("llama3_json")
    assert feed(reader, "Here you go: ", "the answer is 4.") == [("", ""), ("", "")]
    rest, parsed = reader.finish()
    assert _texts(rest) == ("Here you go: the answer is 4.", "")
    assert parsed.content == "Here you go: the answer is 4."


@pytest.mark.parametrize(
    ("chunks", "released"),
    [
        (("[get_", "weather(city='x')]"), [("", ""), ("", "")]),
        (("[link", "](url) text"), [("", ""), ("[link](url) text", "")]),
        (("Let me look.\n[f(", "a=1)]"), [("Let me look.", ""), ("", "")]),
    ],
)
def test_pythonic_holds_back_what_may_be_a_list_of_calls(
    chunks: tuple[str, ...], released: list[tuple[str, str]]
) -> None:
    assert feed(TextCallStream("pythonic"), *chunks) == released


def test_auto_streams_prose_and_holds_a_reply_that_starts_like_json() -> None:
    assert feed(TextCallStream("auto"), "Hello ", "there") == [("Hello", ""), (" there", "")]
    reader = TextCallStream("auto")
    assert feed(reader, '{"name": "f", ', '"parameters": {}}') == [("", ""), ("", "")]
    assert [c.name for c in reader.finish()[1].calls] == ["f"]


def test_auto_with_a_family_settles_only_what_both_readings_agree_on() -> None:
    reader = TextCallStream("auto", model_family="llama-3.1-8b")
    assert feed(reader, "Some prose") == [("", "")]


def test_a_snapshot_shows_the_call_being_written() -> None:
    reader = TextCallStream("mistral_v11")
    feed(reader, "[TOOL_CALLS]get_weather", '{"city": "Par')
    snapshot = reader.snapshot()
    assert snapshot.calls == ()
    assert snapshot.partial is not None
    assert (snapshot.partial.name, snapshot.partial.arguments) == ("get_weather", '{"city": "Par')
    feed(reader, 'is"}')
    assert reader.snapshot().partial is None
    assert [c.arguments for c in reader.snapshot().calls] == ['{"city": "Paris"}']


def test_finish_with_the_providers_text_wins_over_the_chunks() -> None:
    reader = TextCallStream("hermes")
    feed(reader, "Hel")
    rest, parsed = reader.finish("Hello")
    assert _texts(rest) == ("lo", "")
    assert parsed.content == "Hello"
