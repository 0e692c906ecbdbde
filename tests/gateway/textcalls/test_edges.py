"""Inputs no corpus case has: hostile nesting, odd schemas, odd names, native calls."""

from __future__ import annotations

import json

import pytest

from harness.core import Limits, Message
from harness.core.messages import ToolCall, ToolDefinition
from harness.gateway import FunctionModel, ModelRequest
from harness.gateway.model import ResponseDone, TextDelta
from harness.gateway.textcalls import (
    FORMATS,
    MALFORMED_TOOL_CALL,
    TextCallStream,
    TextToolCallModel,
    malformed_call_feedback,
    parse_text,
    render_history,
)
from harness.gateway.textcalls.malformed import example_call
from harness.tools import Toolset


def test_json_nested_too_deeply_is_reported_not_a_crash() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    parsed = parse_text(f'<tool_call>{{"name": "f", "arguments": {deep}}}</tool_call>', "hermes")
    assert parsed.calls == ()
    assert "nested too deeply" in parsed.malformed[0].problem


def test_python_nested_too_deeply_is_reported_not_a_crash() -> None:
    parsed = parse_text("[f(a=" + "[" * 100_000 + "]" * 100_000 + ")]", "pythonic")
    assert parsed.calls == ()
    assert parsed.malformed


def test_numbers_too_large_for_json_are_reported() -> None:
    (malformed,) = parse_text(
        '<tool_call>{"name": "f", "arguments": {"a": 1e999}}</tool_call>', "hermes"
    ).malformed
    assert "too large for JSON" in malformed.problem


def test_null_arguments_are_no_arguments_and_an_empty_list_is_reported() -> None:
    (call,) = parse_text('<tool_call>{"name": "f", "arguments": null}</tool_call>', "hermes").calls
    assert call.arguments == "{}"
    (malformed,) = parse_text("<tool_call>[]</tool_call>", "hermes").malformed
    assert malformed.problem == "the list of calls is empty"


def test_llama3_trailing_comma_is_repaired() -> None:
    (call,) = parse_text('{"name": "f", "parameters": {"a": 1,}}', "llama3_json").calls
    assert json.loads(call.arguments) == {"a": 1}


@pytest.mark.parametrize(
    ("schema", "text", "value"),
    [
        ({"anyOf": [{"type": "integer"}, {}]}, "5", 5),  # an option without a type: any
        ({"enum": [True, False]}, "true", True),
        ({"enum": [0.5, 1.5]}, "1.5", 1.5),
        ({"enum": [None, "x"]}, "null", None),
        ({"const": [1]}, "[1]", [1]),
        ({"type": "number"}, "true", "true"),
    ],
)
def test_qwen3_coder_types_from_enums_consts_and_open_unions(
    schema: dict[str, object], text: str, value: object
) -> None:
    tool = ToolDefinition(name="f", description="", parameters={"properties": {"p": schema}})
    call = f"<function=f>\n<parameter=p>\n{text}\n</parameter>\n</function>"
    (parsed,) = parse_text(call, "qwen3_coder", tools=[tool]).calls
    assert json.loads(parsed.arguments) == {"p": value}


@pytest.mark.parametrize(
    ("text", "names", "problem"),
    [
        ("[tools.search(q='x')]", ["tools.search"], None),
        ("[f(**{'from': 1}), g(**[1])]", ["f"], "only a dict literal can follow **"),
        ("[f(), (lambda: 1)()]", ["f"], "must start with the tool's name"),
        ("[f(), a[0](x=1)]", ["f"], "must start with the tool's name"),
        ("[(lambda: 1)()]", [], None),  # does not look like calls: an answer
    ],
)
def test_pythonic_names(text: str, names: list[str], problem: str | None) -> None:
    parsed = parse_text(text, "pythonic")
    assert [c.name for c in parsed.calls] == names
    if problem is None:
        assert parsed.malformed == ()
    else:
        assert any(problem in m.problem for m in parsed.malformed)


@pytest.mark.parametrize("name", ["qwen3_coder", "pythonic"])
def test_history_with_arguments_that_are_not_json_keeps_them_as_written(name: str) -> None:
    calls = [ToolCall(id="c1", name="f", arguments="{broken")]
    (message,) = render_history([Message.assistant(None, calls)], FORMATS[name])
    assert "{broken" in (message.content or "")


def test_plain_writes_calls_as_plain_lines() -> None:
    call = ToolCall(id="c1", name="f", arguments='{"a": 1}')
    assert FORMATS["plain"].render_calls([call]) == 'f({"a": 1})'


def test_harmony_header_restarted_and_empty_headerless_text() -> None:
    text = "  <|end|><|start|>assistant<|start|>assistant<|channel|>final<|message|>Hi<|end|>"
    assert parse_text(text, "harmony").content == "Hi"


def test_harmony_prose_before_a_channel_is_answer_text_not_a_header() -> None:
    parsed = parse_text("Let me see.<|channel|>final<|message|>Done.", "harmony")
    assert parsed.content == "Let me see.\n\nDone."


def test_malformed_feedback_survives_arguments_it_did_not_write() -> None:
    for arguments in ("not json", "[1]", '{"problem": 3}'):
        assert malformed_call_feedback(arguments).startswith("Your tool call could not be read")
    outcome = Toolset().check(
        ToolCall(id="x", name=MALFORMED_TOOL_CALL, arguments="?"), limits=Limits()
    )
    assert outcome is not None
    assert outcome.status == "invalid_json"


def test_example_calls_use_placeholders_that_fit_the_schema() -> None:
    tool = ToolDefinition(
        name="f",
        description="",
        parameters={
            "properties": {
                "mode": {"enum": ["fast", "slow"]},
                "n": {"type": ["null", "integer"]},
                "free": True,
            },
            "required": ["mode", "n", "free"],
        },
    )
    text = example_call(FORMATS["hermes"], [tool])
    (call,) = parse_text(text, "hermes").calls
    assert json.loads(call.arguments) == {"mode": "fast", "n": 1, "free": "..."}
    assert "tool_name" in example_call(FORMATS["hermes"], [])


def test_the_stream_keeps_the_text_it_received() -> None:
    reader = TextCallStream("hermes")
    reader.feed("ab")
    reader.feed("c")
    assert reader.text == "abc"


def test_the_reasoning_prefix_of_an_opening_tag_waits_when_thinking_was_opened() -> None:
    assert TextCallStream("hermes", thinking_forced_open=True).feed("<thi") == []
    assert parse_text("<thi", "hermes", thinking_forced_open=True).reasoning == "<thi"


async def test_native_calls_from_the_inner_model_are_kept() -> None:
    native = ToolCall(id="n1", name="f", arguments="{}")
    model = TextToolCallModel(
        FunctionModel(lambda _request: Message.assistant("Hi.", [native])), format="hermes"
    )
    tools = (ToolDefinition(name="f", description=""),)
    request = ModelRequest(messages=(Message.user("go"),), tools=tools)
    events = [event async for event in model.stream(request)]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hi."]
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.message.tool_calls == (native,)


async def test_auto_without_a_family_writes_history_in_the_hermes_form() -> None:
    model = TextToolCallModel(FunctionModel(lambda _request: "ok", name="mystery"))
    history = (
        Message.user("go"),
        Message.assistant(None, [ToolCall(id="c1", name="f", arguments="{}")]),
        Message.tool("c1", "done", name="f"),
    )
    sent = model.prepare(ModelRequest(messages=history))
    assert sent.messages[1].content == '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    assert sent.messages[2].content == "<tool_response>\ndone\n</tool_response>"
