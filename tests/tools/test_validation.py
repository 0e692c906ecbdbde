"""The quick accept check of flat tool schemas never accepts what jsonschema refuses."""

import itertools
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # noqa: TID251  (the reference it must agree with)

from harness.tools import tool
from harness.tools.validation import ArgumentsValidator, quick_check


@tool
def sample(
    name: str, count: int, ratio: float, on: bool, tags: list[str], extra: Any = None
) -> str:
    """A tool with one parameter of each usual kind."""
    return name


FLAT: list[dict[str, Any]] = [
    sample.parameters,
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
    {"type": "object", "properties": {"s": {"type": "string", "description": "text"}}},
    {"type": "object", "properties": {"n": {"type": "number"}, "z": {"type": "null"}}},
    {"type": "object", "properties": {"o": {"type": "object"}, "l": {"type": "array"}}},
    {"type": "object", "properties": {"any": {}}, "required": ["any", "missing"]},
    {"type": "object", "additionalProperties": False},
]

VALUES: list[Any] = [0, 1, -7, 2.0, 2.5, True, False, None, "", "x", [], ["x"], [1], {}, {"k": 1}]
KEYS = ["a", "b", "s", "n", "z", "o", "l", "any", "name", "count", "ratio", "on", "tags", "zz"]


def _arguments() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{}]
    for key, value in itertools.product(KEYS, VALUES):
        out.append({key: value})
    for (k1, v1), (k2, v2) in itertools.product(
        itertools.product(KEYS[:4], VALUES[::2]), itertools.product(KEYS[4:9], VALUES[1::2])
    ):
        out.append({k1: v1, k2: v2})
    out += [{"a": va, "b": vb} for va, vb in itertools.product(VALUES, VALUES)]
    out += [{"any": v, "missing": v, "zz": v} for v in VALUES]
    good = {"name": "n", "count": 3, "ratio": 0.5, "on": True, "tags": ["t"]}
    out += [good, {**good, "extra": {"x": [1]}}, {**good, "count": True}, {**good, "zz": 1}]
    return out


@pytest.mark.parametrize("schema", FLAT)
def test_the_quick_check_accepts_only_what_jsonschema_accepts(schema: dict[str, Any]) -> None:
    check = quick_check(schema)
    assert check is not None
    reference = Draft202012Validator(schema)
    accepted = 0
    for arguments in _arguments():
        if check(arguments):
            accepted += 1
            assert reference.is_valid(arguments), (schema, arguments)
    assert accepted > 0  # it does take the quick path for some


def test_usual_valid_arguments_take_the_quick_path() -> None:
    check = quick_check(sample.parameters)
    assert check is not None
    assert check({"name": "n", "count": 3, "ratio": 0.5, "on": True, "tags": ["t"]})
    assert check({"name": "n", "count": 3, "ratio": 1, "on": False, "tags": [], "extra": [1]})


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}},
        {"type": "object", "properties": {"a": {"type": ["integer", "null"]}}},
        {"type": "object", "properties": {"a": {"enum": [1, 2]}}},
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {}}},
        {"type": "object", "properties": {"a": True}},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "required": "a"},
        {"properties": {"a": {"type": "string"}}},
    ],
)
def test_other_schemas_have_no_quick_check(schema: dict[str, Any]) -> None:
    assert quick_check(schema) is None


def test_failures_are_still_explained_by_jsonschema() -> None:
    validator = ArgumentsValidator(FLAT[1])
    assert validator.violations({"a": 2, "b": 3}) == []
    found = [str(v) for v in validator.violations({"a": True, "c": 1})]
    assert found == [
        "$: 'b' is a required property",
        "$: Additional properties are not allowed ('c' was unexpected)",
        "$.a: True is not of type 'integer'",
    ]
