"""Structured output: reading a JSON answer leniently, validating it, asking for repairs."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from harness.agent.output import MAX_REPAIRS, OutputSpec
from harness.errors import ConfigError
from harness.gateway.model import ResponseFormat


class Item(BaseModel):
    name: str
    price: float


class Report(BaseModel):
    title: str
    items: list[Item]
    tags: list[str] = Field(default_factory=list)


REPORT = OutputSpec.from_type(Report)

REPORT_SCHEMA: dict[str, Any] = {
    "title": "Report",
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "price": {"type": "number"}},
                "required": ["name", "price"],
            },
        },
    },
    "required": ["title", "items"],
}
SCHEMA = OutputSpec.from_type(REPORT_SCHEMA)

VALID = {"title": "Q3", "items": [{"name": "tea", "price": 2.5}]}


# --- the extraction corpus: each answer holds VALID in some form --------------------------

LENIENT_ANSWERS = {
    "bare": json.dumps(VALID),
    "pretty": json.dumps(VALID, indent=2),
    "json fence": f"```json\n{json.dumps(VALID)}\n```",
    "plain fence": f"```\n{json.dumps(VALID, indent=2)}\n```",
    "fence with prose": f"Here is the report:\n\n```json\n{json.dumps(VALID)}\n```\n\nAll done!",
    "prose around": f"Sure! {json.dumps(VALID)} Let me know if you need more.",
    "unclosed fence": f"```json\n{json.dumps(VALID)}\n",
    "trailing commas": '{"title": "Q3", "items": [{"name": "tea", "price": 2.5,},],}',
    "trailing comma, newline": (
        '{\n  "title": "Q3",\n  "items": [\n    {"name": "tea", "price": 2.5},\n  ],\n}'
    ),
    "line comments": '{"title": "Q3", // the quarter\n "items": [{"name": "tea", "price": 2.5}]}',
    "block comments": '{"title": "Q3", /* items: */ "items": [{"name": "tea", "price": 2.5}]}',
    "brackets in strings": (
        'Note [1]: {"title": "Q3", "items": [{"name": "tea", "price": 2.5}]} (see [2])'
    ),
    "prose bracket before": "[draft] " + json.dumps(VALID),
    "invalid then valid": '{"title": 1} and corrected: ' + json.dumps(VALID),
    "valid then invalid": json.dumps(VALID) + ' not {"title": 5}',
}


@pytest.mark.parametrize("answer", LENIENT_ANSWERS.values(), ids=LENIENT_ANSWERS.keys())
@pytest.mark.parametrize("spec", [REPORT, SCHEMA], ids=["pydantic", "json-schema"])
def test_lenient_extraction(spec: OutputSpec, answer: str) -> None:
    found = spec.extract(answer)
    assert found.ok, found.errors
    assert found.raw_json == VALID


def test_pydantic_value_is_a_model_instance() -> None:
    found = REPORT.extract(json.dumps(VALID))
    assert found.value == Report(title="Q3", items=[Item(name="tea", price=2.5)])
    assert isinstance(found.value, Report)


def test_json_schema_value_is_the_json() -> None:
    assert SCHEMA.extract(json.dumps(VALID)).value == VALID


def test_strings_keep_their_commas_and_slashes() -> None:
    answer = '{"title": "a, b,] // not a comment /* nor this */", "items": [],}'
    found = SCHEMA.extract(answer)
    assert found.value == {"title": "a, b,] // not a comment /* nor this */", "items": []}


def test_escaped_quotes_inside_strings() -> None:
    answer = r'{"title": "say \"hi\" {not json}", "items": []}'
    assert SCHEMA.extract(answer).value == {"title": 'say "hi" {not json}', "items": []}


def test_nested_values_count_as_one_candidate() -> None:
    nested = {"title": "outer", "items": [{"name": "x", "price": 1}], "meta": {"a": [1, {"b": 2}]}}
    found = SCHEMA.extract(f"result: {json.dumps(nested)}")
    assert found.value == nested


def test_last_valid_candidate_wins() -> None:
    first = {"title": "first", "items": []}
    second = {"title": "second", "items": []}
    answer = f"Draft: {json.dumps(first)}\nFinal: {json.dumps(second)}"
    assert REPORT.extract(answer).value == Report(title="second", items=[])


def test_last_valid_candidate_wins_over_a_later_invalid_one() -> None:
    answer = '{"title": "good", "items": []} and an example of a bad one: {"title": 3}'
    assert REPORT.extract(answer).value == Report(title="good", items=[])


def test_arrays_as_the_output_type() -> None:
    spec = OutputSpec.from_type(list[Item])
    found = spec.extract('The items:\n[{"name": "a", "price": 1}, {"name": "b", "price": 2},]')
    assert found.value == [Item(name="a", price=1), Item(name="b", price=2)]
    schema_spec = OutputSpec.from_type({"type": "array", "items": {"type": "integer"}})
    assert schema_spec.extract("numbers: [1, 2, 3]").value == [1, 2, 3]


def test_a_scalar_output_type_reads_a_whole_answer_or_fence() -> None:
    spec = OutputSpec.from_type({"type": "integer"})
    assert spec.extract("42").value == 42
    assert spec.extract("```\n42\n```").value == 42
    assert not spec.extract("about 42").ok


def test_dataclass_and_typeddict_output_types() -> None:
    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    class Size(TypedDict):
        width: int
        height: int

    assert OutputSpec.from_type(Point).extract('{"x": 1, "y": 2}').value == Point(x=1, y=2)
    size = OutputSpec.from_type(Size).extract('{"width": 3, "height": 4}')
    assert size.value == {"width": 3, "height": 4}


# --- what goes wrong, and how it is told ----------------------------------------------------


def test_validation_errors_name_exact_paths_pydantic() -> None:
    answer = '{"title": "Q3", "items": [{"name": "tea", "price": "cheap"}, {"price": 1}]}'
    found = REPORT.extract(answer)
    assert not found.ok
    assert found.value is None
    assert found.raw_json == json.loads(answer)
    assert any(e.startswith("$.items[0].price: ") for e in found.errors)
    assert "$.items[1].name: Field required" in found.errors


def test_validation_errors_name_exact_paths_json_schema() -> None:
    found = SCHEMA.extract('{"title": 7, "items": [{"name": "tea"}]}')
    assert "$.title: 7 is not of type 'string'" in found.errors
    assert "$.items[0]: 'price' is a required property" in found.errors
    assert found.raw_json == {"title": 7, "items": [{"name": "tea"}]}


def test_no_json_at_all() -> None:
    found = REPORT.extract("I could not finish the report, sorry.")
    assert found.value is None
    assert found.raw_json is None
    assert "no JSON value was found" in found.errors[0]


def test_broken_json_says_where() -> None:
    found = REPORT.extract('Report: {"title": "Q3" "items": []}')
    assert not found.ok
    assert found.raw_json is None  # the inner [] is not what the model meant
    (error,) = found.errors
    assert "Expecting ',' delimiter" in error
    assert '"Q3" ⟦HERE⟧"items"' in error


def test_cut_off_json_says_so() -> None:
    found = REPORT.extract('{"title": "Q3", "items": [{"name": "tea", "pri')
    (error,) = found.errors
    assert "never closed" in error
    assert "cut off" in error


def test_mismatched_brackets_are_not_json() -> None:
    assert not SCHEMA.extract('{"title": "x", "items": [}]').ok


def test_json_after_a_long_text_full_of_brackets() -> None:
    prose = " ".join(f"[source {n}](https://example.com/{n})" for n in range(2000))
    assert REPORT.extract(f"{prose}\n\n{json.dumps(VALID)}").raw_json == VALID


def test_many_brackets_in_prose_do_not_hang() -> None:
    answer = "[" * 5000 + " no json " + "{" * 5000
    assert not REPORT.extract(answer).ok


def test_validate_an_already_parsed_value() -> None:
    assert REPORT.validate(VALID).value == Report.model_validate(VALID)
    bad = REPORT.validate({"title": "x"})
    assert bad.errors == ("$.items: Field required",)
    assert bad.raw_json == {"title": "x"}
    assert SCHEMA.validate([]).errors == ("$: [] is not of type 'object'",)


def test_repair_prompt_content() -> None:
    errors = REPORT.extract('{"title": "Q3", "items": [{"name": "tea"}]}').errors
    prompt = REPORT.repair_prompt(errors)
    assert "not a valid 'Report'" in prompt
    assert "- $.items[0].price: Field required" in prompt
    assert "Reply with only the corrected JSON value" in prompt
    assert "no code fence" in prompt
    assert json.dumps(REPORT.schema, separators=(",", ":")) in prompt


def test_repair_prompt_lists_at_most_ten_errors() -> None:
    errors = [f"$.items[{n}].price: Field required" for n in range(15)]
    prompt = REPORT.repair_prompt(errors)
    assert "$.items[9].price" in prompt
    assert "$.items[10].price" not in prompt
    assert "... and 5 more" in prompt


def test_max_repairs_is_two() -> None:
    assert MAX_REPAIRS == 2


# --- the spec itself --------------------------------------------------------------------------


def test_names() -> None:
    assert REPORT.name == "Report"
    assert SCHEMA.name == "Report"
    assert OutputSpec.from_type({"type": "object"}).name == "output"
    assert OutputSpec.from_type(Report, name="weekly report!").name == "weekly_report"


def test_schema_of_a_pydantic_model() -> None:
    assert REPORT.schema == Report.model_json_schema()


def test_from_type_returns_a_spec_as_it_is() -> None:
    assert OutputSpec.from_type(REPORT) is REPORT


def test_invalid_json_schema_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="output schema 'bad' is not valid JSON Schema"):
        OutputSpec.from_type({"title": "bad", "type": "no-such-type"})


def test_type_without_a_json_schema_is_a_config_error() -> None:
    class Opaque:
        pass

    with pytest.raises(ConfigError, match="cannot be described as JSON Schema"):
        OutputSpec.from_type(Opaque)


def test_dump_gives_json_for_storage() -> None:
    value = REPORT.extract(json.dumps(VALID)).value
    assert REPORT.dump(value) == {**VALID, "tags": []}
    assert SCHEMA.dump(VALID) == VALID


def test_instructions_show_the_schema() -> None:
    text = REPORT.instructions()
    assert "'Report'" in text
    assert json.dumps(REPORT.schema, separators=(",", ":")) in text


def test_response_format_is_strict_only_for_strict_schemas() -> None:
    assert REPORT.response_format() == ResponseFormat(
        name="Report", schema=REPORT.schema, strict=False
    )

    class Closed(BaseModel):
        model_config = ConfigDict(extra="forbid")
        a: int
        b: list[str]

    assert OutputSpec.from_type(Closed).response_format().strict is True
    open_inside = {
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert OutputSpec.from_type(open_inside).response_format().strict is False
