"""Rendering tool return values as text, and truncating long text."""

import dataclasses
import enum
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from harness.tools import NO_OUTPUT, render_result, truncate

NOTE = re.compile(r"\n\[\.\.\. ([\d,]+) of ([\d,]+) characters cut \.\.\.\]\n")


def test_text_that_fits_is_unchanged() -> None:
    assert truncate("hello", 5) == ("hello", 0)
    assert truncate("", 0) == ("", 0)


def test_long_text_keeps_head_and_tail_and_says_how_much_was_cut() -> None:
    text = "".join(f"line {i:05d}\n" for i in range(2000))
    shown, cut = truncate(text, 1000)
    assert len(shown) <= 1000
    assert shown.startswith("line 00000\nline 00001\n")
    assert shown.endswith("line 01999\n")
    match = NOTE.search(shown)
    assert match is not None
    assert int(match.group(1).replace(",", "")) == cut
    assert match.group(2) == f"{len(text):,}"
    assert len(shown) - len(match.group(0)) == len(text) - cut


def test_cuts_fall_on_line_breaks() -> None:
    text = "".join(f"row {i}\n" for i in range(5000))
    shown, _ = truncate(text, 500)
    head, tail = NOTE.split(shown)[0], NOTE.split(shown)[-1]
    assert head.rstrip("\n").split("\n")[-1].startswith("row ")
    assert re.fullmatch(r"row \d+", head.rstrip("\n").split("\n")[-1])
    assert re.fullmatch(r"row \d+", tail.strip("\n").split("\n")[0])


def test_text_without_line_breaks_is_cut_mid_line() -> None:
    shown, cut = truncate("x" * 10_000, 200)
    assert len(shown) <= 200
    assert cut > 9_000
    assert shown.startswith("x")
    assert shown.endswith("x")


def test_tiny_limits_cut_hard_without_a_note() -> None:
    assert truncate("abcdefghij" * 10, 7) == ("abcdefg", 93)
    assert truncate("abc", 0) == ("", 3)


def test_negative_limit_is_a_mistake() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        truncate("abc", -1)


@st.composite
def text_and_limit(draw: st.DrawFn) -> tuple[str, int]:
    alphabet = st.sampled_from("ab\n é\t") | st.characters()
    text = draw(st.text(alphabet, min_size=0, max_size=2000))
    return text, draw(st.integers(min_value=0, max_value=len(text) + 5))


@given(text_and_limit())
def test_truncate_never_exceeds_the_limit_and_accounts_for_every_character(
    case: tuple[str, int],
) -> None:
    text, limit = case
    shown, cut = truncate(text, limit)
    assert len(shown) <= limit
    if cut == 0:
        assert shown == text
    else:
        assert 0 < cut <= len(text)
        match = NOTE.search(shown)
        assert match is not None or shown == text[:limit]
        if match is not None:
            assert int(match.group(1).replace(",", "")) == cut
            kept = shown[: match.start()] + shown[match.end() :]
            assert text.startswith(shown[: match.start()])
            assert text.endswith(shown[match.end() :])
            assert len(kept) == len(text) - cut


class Shape(enum.Enum):
    ROUND = "round"


class Item(BaseModel):
    name: str
    shape: Shape = Shape.ROUND


@dataclasses.dataclass
class Pair:
    left: int
    right: str


class Odd:
    def __str__(self) -> str:
        return "odd thing"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain", "plain"),
        ("", NO_OUTPUT),
        (None, NO_OUTPUT),
        (42, "42"),
        (1.5, "1.5"),
        (True, "True"),
        (Odd(), "odd thing"),
        ({"a": [1, "é"]}, '{"a": [1, "é"]}'),
        ([1, None], "[1, null]"),
        ((1, 2), "[1, 2]"),
        (Item(name="x"), '{"name": "x", "shape": "round"}'),
        (Pair(left=1, right="r"), '{"left": 1, "right": "r"}'),
        ({"odd": Odd()}, '{"odd": "odd thing"}'),
    ],
)
def test_render_result(value: object, text: str) -> None:
    assert render_result(value) == text


def test_render_result_falls_back_to_str_for_unencodable_structures() -> None:
    loop: list[object] = []
    loop.append(loop)
    assert render_result(loop) == "[[...]]"
