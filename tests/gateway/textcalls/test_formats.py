"""Format behaviour beyond the corpus: repairs, typing, reasoning, and the edges of each."""

from __future__ import annotations

import json

import pytest

from harness.core.messages import ToolDefinition
from harness.errors import ConfigError
from harness.gateway.textcalls import FORMATS, family_format, parse_text


def _args(text: str, format: str, **kwargs: object) -> list[object]:
    return [json.loads(c.arguments) for c in parse_text(text, format, **kwargs).calls]  # type: ignore[arg-type]


def tool(name: str, **properties: object) -> ToolDefinition:
    return ToolDefinition(
        name=name, description="", parameters={"type": "object", "properties": properties}
    )


# Repairs: only where the text has one reading.


@pytest.mark.parametrize(
    "body",
    [
        '```json\n{"name": "f", "arguments": {"a": 1}}\n```',
        '```\n{"name": "f", "arguments": {"a": 1}}```',
        '{"name": "f", "arguments": {"a": 1,},}',
        '```json\n{"name": "f", "arguments": {"a": 1,}}\n```',
    ],
)
def test_code_fences_and_trailing_commas_are_repaired(body: str) -> None:
    assert _args(f"<tool_call>{body}</tool_call>", "hermes") == [{"a": 1}]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("{'name': 'f', 'arguments': {}}", "Expecting property name enclosed in double quotes"),
        ('{"name": "f", "arguments": {"a": 1}', "ends before it is complete"),
        ('{"name": "f" "arguments": {}}', "Expecting ',' delimiter"),
        ('{"arguments": {"a": 1}}', 'no "name"'),
        ('{"name": "f", "arguments": {"a": NaN}}', "NaN is not a JSON value"),
    ],
)
def test_anything_else_is_reported_not_guessed(body: str, problem: str) -> None:
    parsed = parse_text(f"<tool_call>{body}</tool_call>", "hermes")
    assert parsed.calls == ()
    (malformed,) = parsed.malformed
    assert problem in malformed.problem
    assert malformed.text == f"<tool_call>{body}</tool_call>"


def test_a_comma_inside_a_string_is_not_a_trailing_comma() -> None:
    text = '<tool_call>{"name": "f", "arguments": {"a": "x,}", "b": [1,]}}</tool_call>'
    assert _args(text, "hermes") == [{"a": "x,}", "b": [1]}]


def test_the_openai_function_shape_and_a_list_in_one_block_are_read() -> None:
    text = (
        '<tool_call>{"function": {"name": "f", "arguments": "{\\"a\\": 1}"}}</tool_call>'
        '<tool_call>[{"name": "g", "arguments": {}}, {"name": "h", "parameters": {"b": 2}}]'
        "</tool_call>"
    )
    parsed = parse_text(text, "hermes")
    assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == [
        ("f", {"a": 1}),
        ("g", {}),
        ("h", {"b": 2}),
    ]


def test_markers_inside_json_strings_do_not_end_a_hermes_block() -> None:
    text = '<tool_call>{"name": "f", "arguments": {"a": "</tool_call><tool_call>"}}</tool_call>'
    assert _args(text, "hermes") == [{"a": "</tool_call><tool_call>"}]


def test_text_after_the_json_of_an_unclosed_block_is_answer_text() -> None:
    parsed = parse_text('<tool_call>{"name": "f", "arguments": {}} and then some', "hermes")
    assert [c.name for c in parsed.calls] == ["f"]
    assert parsed.content == "and then some"


# Typing XML values from the schema.


@pytest.mark.parametrize(
    ("schema", "text", "value"),
    [
        ({"type": "integer"}, "42", 42),
        ({"type": "integer"}, "forty-two", "forty-two"),  # left for the validation to report
        ({"type": "number"}, "2.5", 2.5),
        ({"type": "boolean"}, "True", True),
        ({"type": "boolean"}, "false", False),
        ({"type": "array"}, '["a", "b",]', ["a", "b"]),
        ({"type": "object"}, '{"k": [1, 2]}', {"k": [1, 2]}),
        ({"type": "string"}, "007", "007"),
        ({"type": ["integer", "null"]}, "null", None),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "12", 12),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "twelve", "twelve"),
        ({"enum": ["a", "b"]}, "1", "1"),
        ({"enum": [1, 2]}, "2", 2),
        ({}, "3", 3),  # no type: read as JSON when it is JSON
        ({}, "three", "three"),
    ],
)
def test_qwen3_coder_values_are_typed_by_the_schema(
    schema: dict[str, object], text: str, value: object
) -> None:
    call = (
        f"<tool_call>\n<function=f>\n<parameter=p>\n{text}\n</parameter>\n</function>\n</tool_call>"
    )
    assert _args(call, "qwen3_coder", tools=[tool("f", p=schema)]) == [{"p": value}]


def test_qwen3_coder_without_a_closing_parameter_tag_ends_the_value_at_the_next() -> None:
    call = "<function=f>\n<parameter=a>\nx\n<parameter=b>\ny\n</parameter>\n</function>"
    assert _args(call, "qwen3_coder") == [{"a": "x", "b": "y"}]


def test_qwen3_coder_cut_off_before_the_function_ends_is_reported() -> None:
    parsed = parse_text(
        "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n", "qwen3_coder"
    )
    assert parsed.calls == ()
    (malformed,) = parsed.malformed
    assert (malformed.name, malformed.truncated) == ("f", True)
    assert "ends before </function>" in malformed.problem


def test_qwen3_coder_also_reads_the_hermes_json_form() -> None:
    assert _args('<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>', "qwen3_coder") == [
        {"a": 1}
    ]


# Reasoning.


def test_a_call_inside_closed_reasoning_never_runs() -> None:
    text = '<think>maybe <tool_call>{"name": "rm", "arguments": {}}</tool_call>?</think>Done.'
    parsed = parse_text(text, "hermes")
    assert parsed.calls == ()
    assert parsed.content == "Done."
    assert parsed.reasoning is not None
    assert "rm" in parsed.reasoning


def test_forced_open_reasoning_that_never_closes_is_all_reasoning() -> None:
    parsed = parse_text("still thinking", "hermes", thinking_forced_open=True)
    assert (parsed.content, parsed.reasoning) == (None, "still thinking")


def test_a_closing_tag_without_opening_is_text_unless_the_prompt_opened_it() -> None:
    assert parse_text("a</think>b", "hermes").content == "a</think>b"
    parsed = parse_text("a</think>b", "hermes", thinking_forced_open=True)
    assert (parsed.reasoning, parsed.content) == ("a", "b")


def test_mistral_think_tags_are_reasoning() -> None:
    parsed = parse_text('[THINK]hmm[/THINK]ok[TOOL_CALLS]f{"a": 1}', "mistral_v11")
    assert (parsed.reasoning, parsed.content) == ("hmm", "ok")
    assert [c.name for c in parsed.calls] == ["f"]


def test_command_r_response_markers_are_not_part_of_the_answer() -> None:
    parsed = parse_text("<|START_RESPONSE|>Hello<|END_RESPONSE|>", "command_r7b")
    assert parsed.content == "Hello"


# Harmony.


def test_harmony_calls_a_builtin_name_only_when_that_tool_was_offered() -> None:
    text = '<|channel|>commentary to=python<|message|>{"code": "1+1"}<|call|>'
    assert parse_text(text, "harmony", tools=[tool("python")]).calls[0].name == "python"
    (malformed,) = parse_text(text, "harmony", tools=[tool("run")]).malformed
    assert "'python' is not one of the offered tools (offered: functions.run)" in malformed.problem


def test_harmony_final_and_preamble_are_the_answer_and_analysis_is_reasoning() -> None:
    text = (
        "<|channel|>analysis<|message|>think<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>Checking.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Sunny.<|return|>"
    )
    parsed = parse_text(text, "harmony")
    assert (parsed.reasoning, parsed.content) == ("think", "Checking.\n\nSunny.")


def test_harmony_cut_off_in_a_call_header_is_reported() -> None:
    parsed = parse_text("<|start|>assistant to=functions.f<|channel|>commentary", "harmony")
    (malformed,) = parsed.malformed
    assert (malformed.name, malformed.truncated) == ("f", True)


# Other formats' edges.


def test_pythonic_accepts_json_literals_and_negative_numbers() -> None:
    assert _args("[f(a=true, b=null, c=-2, d=(1, 2))]", "pythonic") == [
        {"a": True, "b": None, "c": -2, "d": [1, 2]}
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[f(1)]", "must name every argument"),
        ("[f(a=x)]", "x is not a literal value"),
        ("[f(a={1: 2})]", "dictionary keys must be strings"),
        ("[f(a=1), 3]", "each entry of the list must be a call"),
    ],
)
def test_pythonic_reports_what_is_not_a_plain_call(text: str, problem: str) -> None:
    parsed = parse_text(text, "pythonic")
    assert any(problem in m.problem for m in parsed.malformed)


def test_pythonic_prose_that_merely_starts_with_a_bracket_is_an_answer() -> None:
    parsed = parse_text("[link](https://example.com) is the page.", "pythonic")
    assert (parsed.calls, parsed.malformed) == ((), ())
    assert parsed.content == "[link](https://example.com) is the page."


def test_llama3_python_tag_is_dropped_and_a_known_tool_without_parameters_is_reported() -> None:
    assert _args('<|python_tag|>{"name": "f", "parameters": {"a": 1}}', "llama3_json") == [{"a": 1}]
    parsed = parse_text('{"name": "f"}', "llama3_json", tools=[tool("f")])
    assert 'has no "parameters"' in parsed.malformed[0].problem


def test_llama3_json_answers_that_are_not_calls_stay_answers() -> None:
    parsed = parse_text('{"answer": 42}', "llama3_json")
    assert (parsed.calls, parsed.malformed, parsed.content) == ((), (), '{"answer": 42}')


def test_mistral_array_cut_off_is_reported_as_cut_off() -> None:
    (malformed,) = parse_text('[TOOL_CALLS][{"name": "add", "arguments": {"a"', "mistral").malformed
    assert (malformed.name, malformed.truncated) == ("add", True)


def test_kimi_and_deepseek_calls_without_arguments_marker_are_reported() -> None:
    kimi = parse_text("<|tool_call_begin|>functions.f:0<|tool_call_end|>", "kimi_k2")
    assert "has no <|tool_call_argument_begin|>" in kimi.malformed[0].problem
    deepseek = parse_text("<｜tool▁call▁begin｜>f<｜tool▁call▁end｜>", "deepseek_v3")
    assert "no <｜tool▁sep｜>" in deepseek.malformed[0].problem


def test_functionary_invalid_json_is_passed_through_under_its_certain_name() -> None:
    (call,) = parse_text("<function=f>{oops}</function>", "functionary_v3.1").calls
    assert (call.name, call.arguments) == ("f", "{oops}")


def test_model_ids_that_repeat_in_one_reply_are_replaced() -> None:
    text = (
        '[TOOL_CALLS][{"name": "a", "arguments": {}, "id": "x"}, '
        '{"name": "b", "arguments": {}, "id": "x"}]'
    )
    first, second = parse_text(text, "mistral").calls
    assert first.id == "x"
    assert second.id.startswith("call_")


# Names.


def test_unknown_format_names_say_which_exist() -> None:
    with pytest.raises(ConfigError, match=r"unknown tool-call format 'xml'.*auto.*hermes"):
        parse_text("", "xml")


@pytest.mark.parametrize(
    ("family", "name"),
    [
        ("Qwen/Qwen2.5-7B-Instruct", "hermes"),
        ("qwen3-coder-30b", "qwen3_coder"),
        ("unsloth/Qwen3.5-9B", "qwen3_coder"),
        ("openai/gpt-oss-120b", "harmony"),
        ("Meta-Llama-3.1-8B-Instruct", "llama3_json"),
        ("llama4_scout", "pythonic"),
        ("DeepSeek-R1-Distill-Qwen-32B", "deepseek_r1"),
        ("deepseek-chat", "deepseek_v3"),
        ("Mistral-Small-3.2-24B", "mistral_v13"),
        ("mistral 7b instruct", "mistral"),
        ("moonshotai/Kimi-K2-Instruct", "kimi_k2"),
        ("LiquidAI/LFM2-1.2B", "pythonic_lfm2"),
        ("phi-4", None),
        (None, None),
    ],
)
def test_families_map_to_formats(family: str | None, name: str | None) -> None:
    assert family_format(family) == name
    assert name is None or name in FORMATS
