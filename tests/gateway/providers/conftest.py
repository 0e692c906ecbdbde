"""Helpers for the Anthropic provider tests: the recorded exchanges of tests/corpus/providers.

Each exchange is served byte-for-byte by `FakeAnthropicServer` (`fake_anthropic.recorded`):
the recorded status and headers, and `json.dumps(body)`, `body_text` or `sse_raw`. What
`expected_normalized` records literally is mapped here onto harness's values.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest

from gateway.conftest import (
    PROVIDERS,
    Exchange,
    a_request,
    collect,
    final_response,
    is_stream_request,
    load_exchanges,
    params,
)
from harness.core.messages import Message
from harness.core.usage import Usage
from harness.gateway.model import (
    ModelResponse,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from harness.gateway.providers.anthropic import AnthropicModel
from harness.testing.fake_anthropic import FakeAnthropicServer

__all__ = [
    "PROVIDERS",
    "a_request",
    "collect",
    "final_response",
    "params",
]


# Anthropic's stop_reason -> harness's finish reason: the table under test, written out.
FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}


def load_anthropic_exchanges() -> list[Exchange]:
    """Every Anthropic Messages exchange of the corpus, sorted by file name."""
    return load_exchanges("anthropic.messages")


def kept_blocks(response: ModelResponse) -> list[dict[str, Any]]:
    """The content layout kept in `provider_data` (empty when nothing needed keeping)."""
    data = response.message.provider_data or {}
    return list(data.get("anthropic", {}).get("content", []))


def assert_matches(response: ModelResponse, exchange: Exchange) -> None:
    """The normalised response agrees with the corpus's `expected_normalized`."""
    expected = exchange["expected_normalized"]
    message = response.message
    assert message.role == "assistant"
    assert message.content == (expected["content"] or None)
    assert message.reasoning == (expected["reasoning"] or None)
    assert response.raw_finish_reason == expected["finish_reason"]
    assert response.finish_reason == FINISH[expected["finish_reason"]]
    assert response.refusal is None
    assert response.model == expected["model"]
    assert_tool_calls(message, expected["tool_calls"], streamed=is_stream_request(exchange))
    usage = expected["usage"]
    cache_read, cache_write = usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]
    assert response.usage == Usage(
        input_tokens=usage["input_tokens"] + cache_read + cache_write,
        output_tokens=usage["output_tokens"],
        cached_tokens=cache_read,
        requests=1,
    )
    kinds = [block["type"] for block in kept_blocks(response)]
    assert kinds.count("redacted_thinking") == expected.get("redacted_thinking_blocks", 0)
    for kind in expected.get("non_client_blocks", []):
        assert kind in kinds  # kept to be sent back, never a client tool call


def assert_tool_calls(message: Message, expected: list[dict[str, Any]], *, streamed: bool) -> None:
    """Complete calls only, in order, ids as sent; streamed arguments exactly as sent.

    A `tool_use` block cut off by `max_tokens` (no `content_block_stop`) is not a call.
    """
    complete = [call for call in expected if call.get("block_complete", True)]
    assert [call.name for call in message.tool_calls] == [call["name"] for call in complete]
    for got, want in zip(message.tool_calls, complete, strict=True):
        assert got.id == want["id"]
        assert json.loads(got.arguments) == json.loads(want["arguments"])
        if streamed:
            assert got.arguments == want["arguments"]
        assert not got.id.startswith("srvtoolu_")


def assert_deltas_add_up(events: Sequence[StreamEvent], response: ModelResponse) -> None:
    """The deltas of a stream, joined, are the final message."""
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert text == (response.message.content or "")
    assert reasoning == (response.message.reasoning or "")
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    for index, call in enumerate(response.message.tool_calls):
        mine = [e for e in deltas if e.index == index]
        assert (mine[0].id, mine[0].name) == (call.id, call.name)
        streamed = "".join(e.arguments for e in mine)
        # a call whose only input_json_delta was empty has the arguments "{}"
        assert streamed == call.arguments or (streamed, call.arguments) == ("", "{}")


@pytest.fixture
def anthropic_server() -> Iterator[FakeAnthropicServer]:
    """A started fake Anthropic server with an empty script."""
    with FakeAnthropicServer() as fake:
        yield fake


@pytest.fixture
async def anthropic_model(anthropic_server: FakeAnthropicServer) -> AsyncIterator[AnthropicModel]:
    """An `AnthropicModel` pointed at `anthropic_server`, closed after the test."""
    async with AnthropicModel(
        "test-model", base_url=anthropic_server.base_url, api_key="test-key"
    ) as opened:
        yield opened
