"""The instructions and the history a text-only model sees, from the same tool definitions."""

from __future__ import annotations

import json

import pytest

from harness.core import Limits, Message
from harness.core.messages import ToolCall
from harness.gateway.textcalls import FORMATS, parse_text, render_history, render_instructions
from harness.gateway.textcalls.malformed import MALFORMED_TOOL_CALL
from harness.tools import Toolset, tool


@tool
def search(query: str, limit: int = 10, exact: bool = False) -> str:
    """Search the notes."""
    return query


@tool
def move(src: str, dst: str, mode: str = "copy") -> str:
    """Move a file."""
    return dst


TOOLS = Toolset([search, move])
WRITERS = sorted(name for name in FORMATS if name != "plain")


@pytest.mark.parametrize("name", WRITERS)
def test_instructions_list_every_tool_and_show_a_call_the_parser_accepts(name: str) -> None:
    fmt = FORMATS[name]
    text = render_instructions(TOOLS.definitions(), fmt)
    for definition in TOOLS.definitions():
        listed = {"name": definition.name, "description": definition.description}
        line = json.dumps(listed | {"parameters": definition.parameters}, ensure_ascii=False)
        assert line in text
    for rule in fmt.rules:
        assert rule in text
    example = text.split("For example:\n", 1)[1]
    parsed = parse_text(example, name, tools=TOOLS.definitions())
    (call,) = parsed.calls
    assert call.name == "search"
    assert json.loads(call.arguments) == {"query": "..."}
    assert TOOLS.check(call, limits=Limits()) is None  # valid against the schema


def test_instructions_say_when_only_one_call_is_allowed() -> None:
    many = render_instructions(TOOLS.definitions(), FORMATS["hermes"])
    one = render_instructions(TOOLS.definitions(), FORMATS["hermes"], parallel=False)
    assert "You may write several calls in one reply" in many
    assert "Call at most one tool per reply." in one
    assert "inside <tool_response> tags" in many
    assert "inside <tool_result> tags" in render_instructions(
        TOOLS.definitions(), FORMATS["mistral"]
    )


def test_history_merges_consecutive_results_and_keeps_other_messages() -> None:
    calls = [
        ToolCall(id="c1", name="search", arguments='{"query": "a"}'),
        ToolCall(id="c2", name="move", arguments="{not json"),
    ]
    messages = [
        Message.system("sys"),
        Message.user("go"),
        Message.assistant(None, calls, reasoning="why"),
        Message.tool("c1", "found a", name="search"),
        Message.tool("c2", "bad arguments", name="move"),
        Message.assistant("done"),
    ]
    out = render_history(messages, FORMATS["hermes"])
    assert [m.role for m in out] == ["system", "user", "assistant", "user", "assistant"]
    assert out[2].reasoning == "why"
    assert out[2].content == (
        '<tool_call>\n{"name": "search", "arguments": {"query": "a"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "move", "arguments": {not json}\n</tool_call>'
    )
    assert out[3].content == (
        "<tool_response>\nfound a\n</tool_response>\n"
        "<tool_response>\nbad arguments\n</tool_response>"
    )
    assert out[4] == messages[5]


def test_history_shows_a_malformed_call_as_it_was_written_between_good_ones() -> None:
    malformed = ToolCall(
        id="m1",
        name=MALFORMED_TOOL_CALL,
        arguments=json.dumps({"problem": "bad", "text": "[TOOL_CALLS]oops"}),
    )
    good = ToolCall(id="c1", name="search", arguments='{"query": "a"}')
    (message,) = render_history(
        [Message.assistant("Hi.", [good, malformed, good])], FORMATS["mistral_v11"]
    )
    assert message.content == (
        'Hi.\n\n[TOOL_CALLS]search[ARGS]{"query": "a"}\n[TOOL_CALLS]oops\n'
        '[TOOL_CALLS]search[ARGS]{"query": "a"}'
    )
    assert message.tool_calls == ()
