"""Every raw tool-call case of the corpus: whole, in chunks, and cut at random places."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.gateway.textcalls import TextCallStream, parse_text

from .corpus import (
    FAMILIES,
    Case,
    assert_case,
    cut,
    is_snapshot,
    load_cases,
    options,
    params,
    parse,
    stream,
    summary,
)

CASES = load_cases()


def test_the_corpus_is_all_here() -> None:
    assert len(CASES) == 79
    assert {case["format"] for case in CASES} == set(FAMILIES)


@pytest.mark.parametrize("case", params(CASES))
def test_whole_text(case: Case) -> None:
    assert_case(parse(case), case)


@pytest.mark.parametrize("size", [1, 3, 7])
@pytest.mark.parametrize("case", params(CASES))
def test_chunks_give_the_same_message(case: Case, size: int) -> None:
    text = case["text"]
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    parsed, content, reasoning = stream(case, pieces)
    assert_case(parsed, case)
    assert summary(parsed) == summary(parse(case))
    if not is_snapshot(case):
        # What streamed is exactly the final answer and reasoning: nothing taken back.
        assert content == (parsed.content or "")
        assert reasoning == (parsed.reasoning or "")


@pytest.mark.parametrize("case", params(CASES))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_cut_gives_the_same_message(case: Case, data: st.DataObject) -> None:
    text = case["text"]
    points = data.draw(st.lists(st.integers(0, len(text)), max_size=12), label="cuts")
    parsed, content, reasoning = stream(case, cut(text, points))
    assert summary(parsed) == summary(parse(case))
    if not is_snapshot(case):
        assert content == (parsed.content or "")
        assert reasoning == (parsed.reasoning or "")


@pytest.mark.parametrize("case", params(CASES))
def test_one_chunk(case: Case) -> None:
    parsed, content, _ = stream(case, [case["text"]])
    assert_case(parsed, case)
    if not is_snapshot(case):
        assert content == (parsed.content or "")


@pytest.mark.parametrize("case", params(CASES))
def test_auto_with_the_model_family_reads_it_the_same(case: Case) -> None:
    family = FAMILIES[case["format"]]
    parsed = parse(case, format="auto", model_family=family)
    assert summary(parsed)[:-1] == summary(parse(case))[:-1]
    assert_case(parsed, case)


NEEDS_FAMILY = "llama3-json-with-surrounding-text"


@pytest.mark.parametrize("case", params([c for c in CASES if c["id"] != NEEDS_FAMILY]))
def test_auto_reads_it_from_the_text_alone(case: Case) -> None:
    """Markers (or a leading JSON object or call list) decide without a family."""
    assert_case(parse(case, format="auto"), case)


def test_llama3_prose_before_the_call_needs_the_family() -> None:
    (case,) = [c for c in CASES if c["id"] == NEEDS_FAMILY]
    plain = parse(case, format="auto")
    assert plain.calls == ()
    assert plain.content == case["text"]
    assert parse(case, format="auto", model_family="llama-3.3-70b").calls[0].name == (
        "getOpenIncidentsTool"
    )


@pytest.mark.parametrize("case", params(CASES))
def test_every_prefix_parses_and_snapshots(case: Case) -> None:
    """A reply cut anywhere (max_tokens, a dropped connection) never breaks the parser, and a
    snapshot while streaming is the parse of the text so far."""
    text = case["text"]
    reader = TextCallStream(case["format"], **options(case))
    for end in range(1, len(text) + 1):
        whole = parse_text(text[:end], case["format"], **options(case))
        assert all(m.problem and m.text for m in whole.malformed)
        reader.feed(text[end - 1 : end])
        expected = parse_text(text[:end], case["format"], partial=True, **options(case))
        assert summary(reader.snapshot()) == summary(expected)
