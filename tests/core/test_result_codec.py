"""Run results through the codec, structured output included."""

from __future__ import annotations

import dataclasses

from pydantic import BaseModel

from harness.core import Message, RunResult, Usage
from harness.core.codec import SCHEMA_VERSION, dumps, loads, result_from_dict, result_to_dict

MESSAGES = (Message.user("total?"), Message.assistant('{"total": 42}'))


def round_trip(result: RunResult) -> RunResult:
    return result_from_dict(loads(dumps(result_to_dict(result))))


def test_a_plain_result_round_trips_without_the_optional_fields() -> None:
    result = RunResult(
        run_id="run_1",
        output="42",
        termination="final_answer",
        complete=True,
        usage=Usage(input_tokens=5, output_tokens=2, requests=1),
        messages=MESSAGES,
    )
    encoded = result_to_dict(result)
    assert encoded["v"] == SCHEMA_VERSION
    assert not {"data", "output_valid", "output_errors", "error"} & set(encoded)
    assert round_trip(result) == result


def test_structured_output_round_trips() -> None:
    result = RunResult(
        run_id="run_2",
        output='{"total": 41}',
        termination="final_answer",
        complete=True,
        data={"total": 41},
        output_valid=False,
        output_errors=("$.total: must be 42",),
    )
    assert round_trip(result) == result


def test_a_pydantic_or_dataclass_value_is_stored_as_its_json() -> None:
    class Total(BaseModel):
        total: int

    @dataclasses.dataclass
    class Pair:
        a: int
        b: list[str]

    for value, json_form in (
        (Total(total=42), {"total": 42}),
        (Pair(1, ["x"]), {"a": 1, "b": ["x"]}),
    ):
        result = RunResult(
            run_id="run_3", output="x", termination="final_answer", complete=True, data=value
        )
        assert round_trip(result).data == json_form


def test_a_result_written_before_structured_output_decodes() -> None:
    old = {
        "v": 1,
        "run_id": "run_old",
        "output": "5",
        "termination": "final_answer",
        "complete": True,
        "usage": {"input_tokens": 25},
    }
    result = result_from_dict(old)
    assert result.data is None
    assert result.output_valid is None
    assert result.output_errors == ()
    assert result.usage == Usage(input_tokens=25)
    assert result.messages == ()
