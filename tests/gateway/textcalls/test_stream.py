"""Streaming: text comes out as soon as it cannot be call markup, never earlier."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.gateway.model import ReasoningDelta, TextDelta
from harness.gateway.textcalls import FORMATS, TextCallStream
from harness.gateway.textcalls._scan import ScanMemo, find_first, held_back


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


LONG_REPLIES = {
    "hermes": "<think>{prose}</think>{prose}<tool_call>{call}</tool_call>",
    "auto": "{prose}",
    "harmony": "<|channel|>analysis<|message|>{prose}<|end|><|channel|>final<|message|>{prose}",
    "qwen3_coder": "{prose}<tool_call>\n<function=f>\n<parameter=a>\n{prose}\n</parameter>",
}


def scanned(format: str, size: int) -> tuple[int, int]:
    """Characters searched to read a reply of about `size` characters fed 8 at a time."""
    unit = "It is < 3 and [so] {on}; to be fine. "
    prose = (unit * (size // len(unit)))[: size // 2]
    call = '{"name": "f", "arguments": {"a": "' + prose.replace('"', "") + '"}}'
    text = LONG_REPLIES[format].format(prose=prose, call=call)
    reader = TextCallStream(format, model_family="Qwen2.5-7B-Instruct")
    for start in range(0, len(text), 8):
        reader.feed(text[start : start + 8])
    return reader.scanned, len(text)


@pytest.mark.parametrize("format", list(LONG_REPLIES))
def test_the_search_for_markers_grows_with_the_reply_not_its_square(format: str) -> None:
    """Searching the whole text again for every chunk would scan about n²/16 characters."""
    small, small_length = scanned(format, 15_000)
    large, large_length = scanned(format, 30_000)
    assert large_length < large < 64 * large_length
    assert large / small < 2.5 * large_length / small_length


THOUGHT_AND_ANSWER = "<think>{prose}</think>\n{prose}\nDone."
LONG_READS = [
    *((format, "Qwen2.5-7B-Instruct", reply) for format, reply in LONG_REPLIES.items()),
    *((format, None, THOUGHT_AND_ANSWER) for format in sorted(FORMATS)),
    ("auto", "Llama-4-Scout", THOUGHT_AND_ANSWER),
    ("auto", "gpt-oss-20b", THOUGHT_AND_ANSWER),
    ("command_r7b", None, "<|START_RESPONSE|>{prose}<|END_RESPONSE|>"),
]


def read_long(format: str, family: str | None, reply: str, size: int) -> TextCallStream:
    """A stream that read a reply of about `size` characters, fed 8 at a time."""
    unit = "It is < 3 and [so] {on}; to be fine. "
    prose = (unit * (size // len(unit)))[: size // 2]
    call = '{"name": "f", "arguments": {"a": "' + prose.replace('"', "") + '"}}'
    text = reply.format(prose=prose, call=call)
    reader = TextCallStream(format, model_family=family)
    for start in range(0, len(text), 8):
        reader.feed(text[start : start + 8])
    return reader


@pytest.mark.parametrize(("format", "family", "reply"), LONG_READS)
def test_the_whole_text_is_read_again_at_markers_not_for_every_chunk(
    format: str, family: str | None, reply: str
) -> None:
    """Between markers (and new lines, for pythonic) a chunk is read on its own.

    So the whole text is read again a few times, whatever its length, and the characters
    searched for markers grow with it: reading it all for each chunk would search n²/16.
    """
    for size in (15_000, 30_000):
        reader = read_long(format, family, reply, size)
        assert reader.rereads <= 8
        assert reader.scanned < 4 * len(reader.text)


MARKER_SETS = [("<tool_call>", "</tool_call>", "<function="), ("<|a|>", "<|ab|>", "[X]", "[XY]")]


@settings(max_examples=200, deadline=None)
@given(
    markers=st.sampled_from(MARKER_SETS),
    pieces=st.lists(
        st.sampled_from(["<", "|", "a", "b", "|>", "[", "X", "Y", "]", "<tool_", "call>", " "]),
        max_size=40,
    ),
    start=st.integers(0, 5),
    step=st.integers(1, 9),
)
def test_a_remembered_search_finds_what_a_fresh_one_finds(
    markers: tuple[str, ...], pieces: list[str], start: int, step: int
) -> None:
    text = "-" * 40 + "".join(pieces)  # past the first 32 characters, searches are resumed
    memo = ScanMemo()
    for end in range(0, len(text) + step, step):
        with memo:
            remembered = find_first(text[:end], markers, start)
        assert remembered == find_first(text[:end], markers, start)


@settings(max_examples=300, deadline=None)
@given(
    markers=st.sampled_from([*MARKER_SETS, ("a",), ("<tool_call>", "<tool_response>")]),
    text=st.text(alphabet="<|abXY[]_tolc>", max_size=20),
)
def test_held_back_is_the_longest_end_that_may_begin_a_marker(
    markers: tuple[str, ...], text: str
) -> None:
    beginnings = {m[:size] for m in markers for size in range(1, len(m))}
    longest = max(
        (size for size in range(1, len(text) + 1) if text[-size:] in beginnings), default=0
    )
    assert held_back(text, markers) == longest
