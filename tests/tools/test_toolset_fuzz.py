"""Whatever a model sends as arguments, `execute` answers with a tool message."""

import asyncio
import enum
import json
from typing import Annotated, Any, Literal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from harness.core import Limits, ToolCall
from harness.tools import Toolset, ToolSpec, tool


class Level(enum.Enum):
    LOW = "low"
    HIGH = "high"


class Filter(BaseModel):
    field: str
    value: int | str | None = None


@tool
def plain(text: str, count: int = 1, ratio: float = 0.5, on: bool = False) -> str:
    """Plain scalars."""
    return text * min(count, 3)


@tool
async def nested(filters: list[Filter], level: Level, mode: Literal["a", "b"] = "a") -> dict:
    """Nested models."""
    return {"n": len(filters), "level": level, "mode": mode}


@tool
def bounded(n: Annotated[int, Field(ge=0, le=10)], tags: dict[str, list[int]] | None = None) -> int:
    """Constrained numbers."""
    return n


@tool
def empty() -> str:
    """No parameters."""
    return "ok"


RAW = ToolSpec.from_schema(
    name="raw",
    description="Raw schema with a oneOf.",
    parameters={
        "type": "object",
        "properties": {
            "target": {
                "oneOf": [{"type": "string", "maxLength": 5}, {"type": "integer", "minimum": 0}]
            }
        },
        "required": ["target"],
    },
    function=lambda target: str(target),
)

TOOLSET = Toolset([plain, nested, bounded, empty, RAW])
NAMES = [*TOOLSET.names, "missing", "", "plain ", "PLAIN"]
LIMITS = Limits(tool_timeout=5.0, max_result_chars=500)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
plausible = st.fixed_dictionaries(
    {},
    optional={
        "text": st.text(max_size=30),
        "count": st.integers(-5, 5),
        "ratio": st.floats(),
        "on": st.booleans(),
        "filters": st.lists(
            st.fixed_dictionaries({"field": st.text(max_size=5)}, optional={"value": json_values}),
            max_size=3,
        ),
        "level": st.sampled_from(["low", "high", "LOW", 1]),
        "mode": st.sampled_from("abc"),
        "n": st.integers(-3, 13) | st.floats(),
        "tags": json_values,
        "target": json_values,
    },
)


def encode(value: Any) -> str:
    return json.dumps(value, allow_nan=True)


adversarial = st.sampled_from(
    [
        "",
        " ",
        "null",
        "{",
        "}",
        "{}}",
        '{"text": }',
        "{'text': 'a'}",
        "[]",
        "[{}]",
        '"{}"',
        "NaN",
        '{"n": Infinity}',
        '{"n": 1e999}',
        '{"n": -0}',
        "1" * 5000,
        '{"n": ' + "9" * 5000 + "}",
        "[" * 5000 + "]" * 5000,
        '{"a":' * 3000,
        "\x00",
        "\ud800",
        '{"text": "\\ud800"}',
        '```json\n{"text": "a"}\n```',
        "<tool_call>{}</tool_call>",
        '{"text": "a"} trailing',
        '\ufeff{"text": "a"}',
        '{"text": "a",}',
        '{"__proto__": {}}',
        "true",
        "-1",
        "1.5",
    ]
)

arguments = (
    adversarial
    | st.text(max_size=200)
    | json_values.map(encode)
    | plausible.map(encode)
    | st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=5), st.integers(1, 20_000))
    | plausible.map(encode).map(lambda s: s[: len(s) // 2])
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=4), data=st.data())
def test_any_arguments_become_a_tool_message(names: list[str], data: st.DataObject) -> None:
    calls = [
        ToolCall(id=f"id-{index}-{name}", name=name, arguments=data.draw(arguments))
        for index, name in enumerate(names)
    ]

    async def execute_all() -> list[Any]:
        return await asyncio.gather(*(TOOLSET.execute(c, limits=LIMITS) for c in calls))

    outcomes = asyncio.run(execute_all())
    for call, outcome in zip(calls, outcomes, strict=True):
        assert outcome.call is call
        assert outcome.message.role == "tool"
        assert outcome.message.tool_call_id == call.id
        assert outcome.message.name == call.name
        assert isinstance(outcome.message.content, str)
        assert outcome.message.content
        assert len(outcome.message.content) <= LIMITS.max_result_chars
        assert outcome.status != "tool_crash", outcome.output
        assert outcome.ok or "Traceback" not in outcome.output
        if call.name not in TOOLSET:
            assert outcome.status == "unknown_tool"
