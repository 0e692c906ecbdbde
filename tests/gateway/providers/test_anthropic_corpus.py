"""AnthropicModel against every recorded Anthropic exchange, over real HTTP from 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.messages import Message, ToolCall, ToolDefinition
from harness.errors import (
    ContextOverflowError,
    ModelAPIError,
    ModelAuthenticationError,
    ModelBadRequestError,
    ModelNotFoundError,
    ModelOverloadedError,
    ModelRateLimitError,
)
from harness.gateway.model import ModelRequest, ModelSettings
from harness.gateway.providers.anthropic import AnthropicModel
from harness.testing.fake_anthropic import FakeAnthropicServer, recorded

from .conftest import (
    Exchange,
    a_request,
    assert_deltas_add_up,
    assert_matches,
    collect,
    final_response,
    is_stream_request,
    load_anthropic_exchanges,
    params,
)

EXCHANGES = load_anthropic_exchanges()
CHATS = [e for e in EXCHANGES if e["kind"] == "chat"]
STREAMS = [e for e in EXCHANGES if e["kind"] == "chat_stream"]
ERRORS = [e for e in EXCHANGES if e["kind"] == "error"]

# file stem -> (error class, retryable); written out rather than derived
ERROR_OUTCOMES: dict[str, tuple[type[ModelAPIError], bool]] = {
    "anthropic-error-400-invalid-request": (ModelBadRequestError, False),
    "anthropic-error-400-invalid-shape": (ModelBadRequestError, False),
    "anthropic-error-400-prompt-too-long-observed": (ContextOverflowError, False),
    "anthropic-error-401-authentication": (ModelAuthenticationError, False),
    "anthropic-error-404-not-found-beta": (ModelNotFoundError, False),
    "anthropic-error-404-on-stream-request": (ModelNotFoundError, False),
    "anthropic-error-429-rate-limit-observed": (ModelRateLimitError, True),
    "anthropic-error-529-overloaded-observed": (ModelOverloadedError, True),
}

# Recorded requests that harness messages cannot express, and why.
NOT_BUILDABLE = {
    "anthropic-error-400-invalid-shape": "its messages are a bare string, which the API rejects",
}
BUILDABLE = [
    e
    for e in EXCHANGES
    if e["provenance"] == "recorded"
    and e["request"].get("body")
    and not e["request"].get("reconstructed")
    and e["id"] not in NOT_BUILDABLE
]


def test_every_anthropic_exchange_is_tested() -> None:
    assert len(EXCHANGES) == 20
    assert len(CHATS) + len(STREAMS) + len(ERRORS) == len(EXCHANGES)
    assert {e["id"] for e in ERRORS} == set(ERROR_OUTCOMES)
    assert (len(CHATS), len(STREAMS)) == (7, 5)
    assert len(BUILDABLE) == 13


@pytest.mark.parametrize("exchange", params(CHATS))
async def test_chat(
    exchange: Exchange, anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    anthropic_server.add(recorded(exchange))
    response = await anthropic_model.request(a_request(request_id="req_corpus"))
    assert_matches(response, exchange)
    assert response.request_id == "req_corpus"
    assert anthropic_server.requests[0].headers["x-request-id"] == "req_corpus"


@pytest.mark.parametrize("pieces", [None, 1, 7], ids=["whole", "1-byte", "7-byte"])
@pytest.mark.parametrize("exchange", params(STREAMS))
async def test_stream(
    exchange: Exchange,
    pieces: int | None,
    anthropic_server: FakeAnthropicServer,
    anthropic_model: AnthropicModel,
) -> None:
    anthropic_server.add(recorded(exchange, chunk_size=pieces))
    events = await collect(anthropic_model, a_request(request_id="req_stream"))
    response = final_response(events)
    assert_matches(response, exchange)
    assert_deltas_add_up(events, response)
    assert response.request_id == "req_stream"
    assert anthropic_server.requests[0].headers["x-request-id"] == "req_stream"


async def test_usage_of_a_stream_is_its_last_report(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    mixed = next(e for e in STREAMS if e["id"] == "anthropic-stream-server-tool-and-client-tool")
    assert '"input_tokens":702' in mixed["response"]["sse_raw"]  # message_start said 702
    anthropic_server.add(recorded(mixed))
    response = final_response(await collect(anthropic_model, a_request()))
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1591, 175)


@pytest.mark.parametrize("exchange", params(ERRORS))
async def test_error(
    exchange: Exchange, anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    anthropic_server.add(recorded(exchange))
    request = a_request(request_id="req_error")
    streaming = is_stream_request(exchange)
    call = collect(anthropic_model, request) if streaming else anthropic_model.request(request)
    with pytest.raises(ModelAPIError) as caught:
        await call
    error = caught.value
    cls, retryable = ERROR_OUTCOMES[exchange["id"]]
    said = exchange["expected_normalized"]["error"]
    assert type(error) is cls
    assert (error.status, error.retryable) == (said["status"], retryable)
    assert error.retry_after is None  # none of these recorded a retry-after header
    assert error.provider_type == said["provider_error_type"]
    assert error.request_id == "req_error"
    message = str(error)
    assert message.startswith(f"HTTP {error.status}: ")
    assert said["message"] in message
    provider_id = said.get("request_id") or exchange["response"]["headers"].get("request-id")
    if provider_id:  # Anthropic's own id, for a support ticket
        assert provider_id in message


# --- request building against recorded requests ---------------------------------------------


@pytest.mark.parametrize("exchange", params(BUILDABLE))
async def test_request_body_matches_the_recorded_one(
    exchange: Exchange, anthropic_server: FakeAnthropicServer
) -> None:
    body = exchange["request"]["body"]
    anthropic_server.add(recorded(exchange))
    async with AnthropicModel(
        "test-model", base_url=anthropic_server.base_url, api_key="k"
    ) as model:
        request = _request_for(body)
        try:
            await (collect(model, request) if body.get("stream") else model.request(request))
        except ModelAPIError:
            assert exchange["kind"] == "error"
    sent = anthropic_server.requests[0].body
    expected = {**body, "model": "test-model"}
    assert _without_stream(sent) == _without_stream(expected)
    assert sent.get("stream", False) == body.get("stream", False)


def _without_stream(body: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key != "stream"}


def _request_for(body: dict[str, Any]) -> ModelRequest:
    """The harness request that should produce `body`: the wire read back, field by field."""
    messages: list[Message] = [Message.system(body["system"])] if "system" in body else []
    for turn in body["messages"]:
        messages.extend(_messages_of(turn))
    plain_tools = all(
        set(t) == {"name", "description", "input_schema"} for t in body.get("tools", [])
    )
    tools = [
        ToolDefinition(name=t["name"], description=t["description"], parameters=t["input_schema"])
        for t in body.get("tools", [])
        if plain_tools
    ]
    named = {"model", "messages", "system", "max_tokens", "stop_sequences", "stream", "tools"}
    extra = {key: value for key, value in body.items() if key not in named}
    if not plain_tools:
        extra["tools"] = body["tools"]
    settings = ModelSettings(
        max_output_tokens=body["max_tokens"],
        stop=tuple(body.get("stop_sequences", ())),
        extra_body=extra or None,
    )
    return ModelRequest(messages=tuple(messages), tools=tuple(tools), settings=settings)


def _messages_of(turn: dict[str, Any]) -> list[Message]:
    blocks = turn["content"]
    if turn["role"] == "assistant":
        text = "".join(b["text"] for b in blocks if b["type"] == "text")
        calls = [
            ToolCall(id=b["id"], name=b["name"], arguments=json.dumps(b["input"]))
            for b in blocks
            if b["type"] == "tool_use"
        ]
        return [Message.assistant(text or None, calls)]
    messages: list[Message] = []
    for block in blocks:
        if block["type"] == "tool_result":
            assert block["is_error"] is False
            messages.append(Message.tool(block["tool_use_id"], block["content"]))
        else:
            messages.append(Message.user(block["text"]))
    return messages


# --- any cut of a recorded stream ------------------------------------------------------------


def _cuts(exchange: Exchange) -> st.SearchStrategy[list[bytes]]:
    raw = exchange["response"]["sse_raw"].encode()
    points = st.lists(st.integers(1, len(raw) - 1), max_size=40, unique=True)
    return points.map(lambda cut: _pieces(raw, sorted(cut)))


def _pieces(raw: bytes, cuts: list[int]) -> list[bytes]:
    return [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]


def test_any_cut_of_a_recorded_stream_gives_the_same_message() -> None:
    loop = asyncio.new_event_loop()
    with FakeAnthropicServer() as server:
        model = AnthropicModel("test-model", base_url=server.base_url, api_key="k")

        @settings(max_examples=60, deadline=None)
        @given(data=st.data())
        def check(data: Any) -> None:
            exchange = data.draw(st.sampled_from(STREAMS), label="exchange")
            pieces = data.draw(_cuts(exchange), label="pieces")
            server.add(recorded(exchange, pieces=pieces))
            events = loop.run_until_complete(collect(model, a_request()))
            response = final_response(events)
            assert_matches(response, exchange)
            assert_deltas_add_up(events, response)

        try:
            check()
        finally:
            loop.run_until_complete(model.aclose())
            loop.close()
