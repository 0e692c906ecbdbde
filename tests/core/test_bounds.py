"""The bounds on JSON written by a model: measured without recursion, refused by name."""

import pytest

from harness.core.bounds import MAX_JSON_CHARS, MAX_JSON_DEPTH, json_bound_problem, json_depth


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("{}", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('{"a": "[[[[{{{{"}', 1),  # brackets inside strings do not count
        ('{"a": "\\"[[["}', 1),  # nor after an escaped quote
        ("[" * 5000, 5000),  # unclosed: measured all the same
        ("]]][", 1),
    ],
)
def test_json_depth(text: str, depth: int) -> None:
    assert json_depth(text) == depth


def test_a_value_within_the_bounds_has_no_problem() -> None:
    assert json_bound_problem("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is None


def test_the_problem_names_the_limit() -> None:
    assert json_bound_problem("[" * 999) == (
        "the arguments: nested 999 levels deep, more than the 64 levels of arrays and "
        "objects accepted"
    )
    long = json_bound_problem('"' + "x" * MAX_JSON_CHARS + '"', what="the answer")
    assert long == "the answer: 1,000,002 characters, more than the 1,000,000 accepted"
