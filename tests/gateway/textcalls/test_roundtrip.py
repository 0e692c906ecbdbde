"""Calls written by a format (history, instructions) read back the same with that format."""

from __future__ import annotations

import json
import keyword
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.messages import ToolCall, ToolDefinition
from harness.gateway.textcalls import FORMATS, parse_text

WRITERS = sorted(name for name in FORMATS if name != "plain")

# Tool names are Python names (pythonic calls need them); argument names may be anything
# a schema allows, Python keywords and dashes included.
names = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True).filter(
    lambda name: not keyword.iskeyword(name)
)
keys = st.from_regex(r"[a-z][a-z0-9_-]{0,12}", fullmatch=True) | st.sampled_from(
    ["from", "class", "if", "import"]
)
# No markup characters in strings: a value holding a format's own markers is ambiguous.
texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="<>[]|｜`\r"),
    max_size=30,
)
scalars = st.none() | st.booleans() | st.integers(-(10**12), 10**12) | texts
scalars |= st.floats(allow_nan=False, allow_infinity=False, width=64)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=6,
)
arguments = st.dictionaries(keys, values, max_size=4)
calls = st.lists(st.tuples(names, arguments), min_size=1, max_size=3)


def _schema(value: Any) -> dict[str, Any]:
    kinds = {type(None): "null", bool: "boolean", int: "integer", float: "number", str: "string"}
    kind = kinds.get(type(value), "array" if isinstance(value, list) else "object")
    return {"type": kind}


def _tools(written: list[tuple[str, dict[str, Any]]]) -> list[ToolDefinition]:
    schemas: dict[str, dict[str, Any]] = {}
    for name, args in written:
        properties = schemas.setdefault(name, {"type": "object", "properties": {}})["properties"]
        for key, value in args.items():
            # The same key with another type in a second call: any type will do.
            properties[key] = (
                {} if key in properties and properties[key] != _schema(value) else _schema(value)
            )
    return [ToolDefinition(name=n, description="", parameters=s) for n, s in schemas.items()]


@pytest.mark.parametrize("name", WRITERS)
@settings(max_examples=60, deadline=None)
@given(written=calls)
def test_written_calls_read_back(name: str, written: list[tuple[str, dict[str, Any]]]) -> None:
    fmt = FORMATS[name]
    tool_calls = [
        ToolCall(id=f"a{index:08d}", name=n, arguments=json.dumps(a))
        for index, (n, a) in enumerate(written)
    ]
    text = fmt.render_calls(tool_calls)
    parsed = parse_text(text, name, tools=_tools(written))
    assert parsed.malformed == ()
    assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == written
    assert parsed.content is None


@pytest.mark.parametrize("name", WRITERS)
def test_a_call_after_an_answer_reads_back(name: str) -> None:
    fmt = FORMATS[name]
    call = ToolCall(id="a00000001", name="get_weather", arguments='{"city": "Paris"}')
    parsed = parse_text(f"Let me check.\n{fmt.render_calls([call])}", name)
    assert [(c.name, c.arguments) for c in parsed.calls] == [("get_weather", '{"city": "Paris"}')]
    if name != "llama3_json":  # Llama 3 drops prose around calls, as vLLM does
        assert parsed.content == "Let me check."
