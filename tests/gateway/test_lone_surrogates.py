r"""A lone UTF-16 surrogate ("\ud800" in the JSON a server sends) over every adapter.

Python decodes such an escape into a `str` that cannot be encoded as UTF-8. Each adapter
hands on U+FFFD instead, in the answer, the reasoning, the tool name and the arguments, and
in the text deltas of a stream, so nothing downstream fails to encode it.
"""

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest

from gateway.conftest import collect, final_response
from harness.core import Message, ToolCall, ToolDefinition
from harness.gateway import Model, ModelRequest, ModelResponse
from harness.gateway.model import ReasoningDelta, TextDelta
from harness.gateway.providers.anthropic import AnthropicModel
from harness.gateway.providers.openai import OpenAIModel
from harness.gateway.textcalls import TextToolCallModel
from harness.testing import FakeOpenAIServer, FakeReply
from harness.testing.fake_anthropic import FakeAnthropicServer

LONE = "\ud800"
BAD = "\ufffd"
TOOLS = (ToolDefinition(name="add", description="Add.", parameters={"type": "object"}),)
REQUEST = ModelRequest(messages=(Message.user("go"),), tools=TOOLS)
HOSTILE = FakeReply(
    content=f"answer {LONE}",
    reasoning=f"thought {LONE}",
    calls=(
        ToolCall(id="c1", name=f"add{LONE}", arguments='{"a": "' + LONE + '"}'),
        ToolCall(id="c2", name="add", arguments='{"a": "\\ud800"}'),  # the escape, in the text
    ),
    finish_reason="tool_calls",
)
TEXT_CALL = FakeReply.text(
    f"calling {LONE}<tool_call>" + '{"name": "add", "arguments": {"a": "\\ud800"}}</tool_call>'
)

Opener = Callable[[FakeReply], AbstractAsyncContextManager[Model]]


@asynccontextmanager
async def openai(reply: FakeReply) -> AsyncIterator[Model]:
    with FakeOpenAIServer([reply]) as server:
        async with OpenAIModel("m", base_url=server.base_url) as model:
            yield model


@asynccontextmanager
async def anthropic(reply: FakeReply) -> AsyncIterator[Model]:
    with FakeAnthropicServer([reply]) as server:
        async with AnthropicModel("m", base_url=server.base_url, api_key="k") as model:
            yield model


def encodable(response: ModelResponse) -> dict[str, Any]:
    """The message's text fields, each of which must encode as UTF-8."""
    message = response.message
    fields: dict[str, Any] = {
        "content": message.content,
        "reasoning": message.reasoning,
        "calls": [(c.name, c.arguments) for c in message.tool_calls],
        "provider_data": message.provider_data,
    }
    str(fields).encode("utf-8")  # raises UnicodeEncodeError on a lone surrogate
    return fields


async def answer(open_model: Opener, reply: FakeReply, stream: bool) -> ModelResponse:
    async with open_model(reply) as model:
        if not stream:
            return await model.request(REQUEST)
        events = await collect(model, REQUEST)
    for event in events:
        if isinstance(event, TextDelta | ReasoningDelta):
            event.text.encode("utf-8")
    return final_response(events)


@pytest.mark.parametrize("stream", [False, True], ids=["request", "stream"])
@pytest.mark.parametrize("open_model", [openai, anthropic], ids=["openai", "anthropic"])
async def test_every_provider_replaces_lone_surrogates(open_model: Opener, stream: bool) -> None:
    response = await answer(open_model, HOSTILE, stream)
    fields = encodable(response)
    assert fields["content"] == f"answer {BAD}"
    assert fields["reasoning"] == f"thought {BAD}"
    names = [name for name, _ in fields["calls"]]
    assert names == [f"add{BAD}", "add"]
    # An escape inside streamed arguments text is plain text (the toolset cleans what it
    # decodes); Anthropic's whole message sends the arguments as an object, decoded here.
    escaped = [args.replace(" ", "") for _, args in fields["calls"]][1]
    assert escaped in ('{"a":"\\ud800"}', '{"a":"' + BAD + '"}')


@pytest.mark.parametrize("stream", [False, True], ids=["request", "stream"])
@pytest.mark.parametrize("open_model", [openai, anthropic], ids=["openai", "anthropic"])
async def test_text_tool_calls_replace_the_surrogates_they_decode(
    open_model: Opener, stream: bool
) -> None:
    @asynccontextmanager
    async def text_mode(reply: FakeReply) -> AsyncIterator[Model]:
        async with open_model(reply) as inner:
            yield TextToolCallModel(inner, format="hermes")

    response = await answer(text_mode, TEXT_CALL, stream)
    fields = encodable(response)
    assert fields["content"] == f"calling {BAD}"
    assert [(name, args.replace(" ", "")) for name, args in fields["calls"]] == [
        ("add", '{"a":"' + BAD + '"}')
    ]
