"""Lone surrogates from a model become U+FFFD; everything else is left as it is."""

from harness.core import Message, ToolCall
from harness.core.unicode import clean_json, clean_message, clean_text


def test_clean_text() -> None:
    assert clean_text("plain ü 😀") == "plain ü 😀"
    assert clean_text("a\ud800b\udfff") == "a\ufffdb\ufffd"
    assert clean_text("\ud83d\ude00") == "😀"  # two halves in order make one character


def test_clean_json_cleans_keys_and_values() -> None:
    assert clean_json({"k\ud800": ["v\udc00", 1, None, True]}) == {
        "k\ufffd": ["v\ufffd", 1, None, True]
    }


def test_clean_message_returns_the_same_message_when_clean() -> None:
    message = Message.assistant("fine", [ToolCall(id="c", name="t", arguments="{}")])
    assert clean_message(message) is message
    dirty = Message.assistant("x\ud800", [ToolCall(id="c", name="t\ud800", arguments='"\ud800"')])
    cleaned = clean_message(dirty)
    assert cleaned.content == "x\ufffd"
    assert cleaned.tool_calls == (ToolCall(id="c", name="t\ufffd", arguments='"\ufffd"'),)
