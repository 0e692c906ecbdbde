"""AnthropicModel: request building, round trips, finish reasons, usage and errors, over HTTP."""

from __future__ import annotations

import dataclasses
import json
import socket
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any, cast

import pytest

from harness.core.codec import message_from_dict, message_to_dict
from harness.core.messages import Message, ToolCall, ToolDefinition
from harness.errors import (
    ConfigError,
    ContextOverflowError,
    ModelAPIError,
    ModelAuthenticationError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelNotFoundError,
    ModelOverloadedError,
    ModelRateLimitError,
    ModelResponseError,
    ModelServerError,
    ModelStreamError,
    ModelTimeoutError,
)
from harness.gateway.model import (
    Model,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ReasoningDelta,
    ResponseFormat,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from harness.gateway.providers.anthropic import AnthropicModel
from harness.testing.fake_anthropic import (
    FakeAnthropicServer,
    error,
    error_event,
    recorded,
    signature,
)
from harness.testing.fake_openai import FakeReply

from .conftest import PROVIDERS, a_request, collect, final_response

SSE = {"content-type": "text/event-stream"}


def _exchange(name: str) -> dict[str, Any]:
    return json.loads((PROVIDERS / f"{name}.json").read_text(encoding="utf-8"))


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _use(call_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "weather", "input": arguments}


def _result(call_id: str, content: str, *, is_error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}


async def _answer(model: AnthropicModel, request: ModelRequest, streaming: bool) -> ModelResponse:
    if streaming:
        return final_response(await collect(model, request))
    return await model.request(request)


def test_name_and_protocol() -> None:
    model = AnthropicModel("claude-x", base_url="http://127.0.0.1:9", api_key="k")
    assert model.name == "anthropic:claude-x"
    assert isinstance(model, Model)
    assert model.base_url == "http://127.0.0.1:9"
    assert AnthropicModel("c", base_url="http://127.0.0.1:9", label="work").name == "work"


_CREDENTIAL_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CONFIG_DIR",
    "ANTHROPIC_PROFILE",
    "ANTHROPIC_FEDERATION_RULE_ID",
)


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """An environment without Anthropic credentials, and a home without SDK profiles."""
    for name in _CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return monkeypatch


def test_no_key_for_the_anthropic_api_is_a_config_error(
    no_credentials: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ConfigError, match="set ANTHROPIC_API_KEY"):
        AnthropicModel("claude-x")
    no_credentials.setenv("ANTHROPIC_API_KEY", "from-env")
    assert AnthropicModel("claude-x").base_url == "https://api.anthropic.com"


def test_an_unreadable_credentials_profile_is_a_config_error(
    no_credentials: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    no_credentials.setenv("ANTHROPIC_PROFILE", "work")
    no_credentials.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path))
    with pytest.raises(ConfigError, match=r"no usable credentials.*work"):
        AnthropicModel("claude-x")


async def test_a_server_of_ones_own_needs_no_key(
    no_credentials: pytest.MonkeyPatch, anthropic_server: FakeAnthropicServer
) -> None:
    anthropic_server.add(FakeReply.text("hi"), FakeReply.text("again"))
    async with AnthropicModel("m", base_url=anthropic_server.base_url) as model:
        assert (await model.request(a_request())).message.content == "hi"
    no_credentials.setenv("ANTHROPIC_BASE_URL", anthropic_server.base_url)
    async with AnthropicModel("m") as model:
        assert (await model.request(a_request())).message.content == "again"
    assert len(anthropic_server.requests) == 2


def test_max_output_tokens_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="max_output_tokens"):
        AnthropicModel("m", base_url="http://127.0.0.1:9", max_output_tokens=0)


# --- X-Request-ID -------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["request", "stream"])
async def test_every_request_carries_a_request_id(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel, streaming: bool
) -> None:
    anthropic_server.add(FakeReply.text("a"), FakeReply.text("b"), error(529, "Overloaded"))
    given = await _answer(anthropic_model, a_request(request_id="req_given"), streaming)
    fresh = await _answer(anthropic_model, a_request(), streaming)
    with pytest.raises(ModelOverloadedError) as caught:
        await _answer(anthropic_model, a_request(request_id="req_failing"), streaming)
    sent = [r.headers["x-request-id"] for r in anthropic_server.requests]
    assert sent[0] == given.request_id == "req_given"
    assert sent[1] == fresh.request_id
    assert fresh.request_id is not None
    assert fresh.request_id.startswith("req_")
    assert sent[2] == caught.value.request_id == "req_failing"


# --- request body ---------------------------------------------------------------------------

WEATHER = ToolDefinition(
    name="weather",
    description="Weather of a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
CONVERSATION = (
    Message.system("Be brief."),
    Message.user("Weather in Paris and Rome?"),
    Message.assistant(
        "Checking both.",
        [
            ToolCall(id="toolu_1", name="weather", arguments='{"city": "Paris"}'),
            ToolCall(id="toolu_2", name="weather", arguments='{"city": "Rome"}'),
        ],
    ),
    Message.tool("toolu_1", "sunny", name="weather"),
    Message(
        role="tool",
        content="no such city",
        tool_call_id="toolu_2",
        provider_data={"anthropic": {"is_error": True}},
    ),
    Message.user("And tomorrow?"),
    Message.assistant(""),  # an empty reply: the API takes no empty turn
    Message.user("Please answer."),
)


async def test_request_body(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    anthropic_server.add(FakeReply.text("ok"))
    settings = ModelSettings(
        temperature=0.2,
        top_p=0.9,
        max_output_tokens=64,
        seed=7,
        stop=("END",),
        parallel_tool_calls=False,
        extra_body={"thinking": {"type": "enabled", "budget_tokens": 1024}},
    )
    request = ModelRequest(messages=CONVERSATION, tools=(WEATHER,), settings=settings)
    await anthropic_model.request(request)
    sent = anthropic_server.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.body == {
        "model": "test-model",
        "stream": False,
        "max_tokens": 64,
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": [_text("Weather in Paris and Rome?")]},
            {
                "role": "assistant",
                "content": [
                    _text("Checking both."),
                    _use("toolu_1", {"city": "Paris"}),
                    _use("toolu_2", {"city": "Rome"}),
                ],
            },
            {
                "role": "user",
                "content": [
                    _result("toolu_1", "sunny"),
                    _result("toolu_2", "no such city", is_error=True),
                    _text("And tomorrow?"),
                    _text("Please answer."),
                ],
            },
        ],
        "tools": [
            {
                "name": "weather",
                "description": "Weather of a city.",
                "input_schema": WEATHER.parameters,
            }
        ],
        "temperature": 0.2,
        "top_p": 0.9,
        "stop_sequences": ["END"],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    assert sent.headers["anthropic-version"]


async def test_defaults_and_odd_arguments(
    anthropic_server: FakeAnthropicServer, anthropic_server_model: AnthropicModel
) -> None:
    anthropic_server.add(FakeReply.text("ok"), FakeReply.text("ok"))
    await anthropic_server_model.request(a_request())
    history = (
        Message.system("One."),
        Message.system("Two."),
        Message.user("go"),
        Message.assistant(
            None,
            [
                ToolCall(id="c1", name="now", arguments=""),
                ToolCall(id="c2", name="ls", arguments='{"path": "/tmp"'),
                ToolCall(id="c3", name="ls", arguments='["not", "an", "object"]'),
            ],
        ),
    )
    settings = ModelSettings(parallel_tool_calls=True)  # the API's default: nothing is sent
    await collect(anthropic_server_model, ModelRequest(messages=history, settings=settings))
    plain, streamed = (r.body for r in anthropic_server.requests)
    assert plain == {
        "model": "test-model",
        "stream": False,
        "max_tokens": 321,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
    }
    assert streamed["stream"] is True
    assert streamed["system"] == "One.\n\nTwo."
    assert "tool_choice" not in streamed
    assert [b["input"] for b in streamed["messages"][1]["content"]] == [
        {},
        {"raw_arguments": '{"path": "/tmp"'},
        {"raw_arguments": '["not", "an", "object"]'},
    ]


@pytest.fixture
async def anthropic_server_model(
    anthropic_server: FakeAnthropicServer,
) -> AsyncGenerator[AnthropicModel]:
    """A model with its own default for `max_tokens`."""
    async with AnthropicModel(
        "test-model", base_url=anthropic_server.base_url, api_key="k", max_output_tokens=321
    ) as model:
        yield model


# --- round trips: what came back goes back exactly -------------------------------------------


def _stored(message: Message) -> Message:
    """The message after a trip through the run store's JSON codec."""
    return message_from_dict(json.loads(json.dumps(message_to_dict(message))))


@pytest.mark.parametrize("streaming", [False, True], ids=["request", "stream"])
async def test_thinking_tool_use_and_result_round_trip(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel, streaming: bool
) -> None:
    thinking = "The user wants the weather; the tool knows it."
    call = ToolCall(id="toolu_w", name="weather", arguments='{"city":"Oslo"}')
    anthropic_server.add(
        FakeReply(reasoning=thinking, calls=(call,), finish_reason="tool_calls"),
        FakeReply.text("It is sunny in Oslo."),
    )
    history = (Message.system("Be brief."), Message.user("Weather in Oslo?"))
    first = await _answer(
        anthropic_model, ModelRequest(messages=history, tools=(WEATHER,)), streaming
    )
    assert first.message.reasoning == thinking
    assert first.message.tool_calls == (call,)
    assert first.finish_reason == "tool_calls"
    history = (*history, _stored(first.message), Message.tool("toolu_w", "sunny", name="weather"))
    second = await _answer(
        anthropic_model, ModelRequest(messages=history, tools=(WEATHER,)), streaming
    )
    assert second.message.content == "It is sunny in Oslo."  # the fake checked the signature
    turns = anthropic_server.requests[1].body["messages"]
    assert turns[1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": thinking, "signature": signature(thinking)},
                _use("toolu_w", {"city": "Oslo"}),
            ],
        },
        {"role": "user", "content": [_result("toolu_w", "sunny")]},
    ]


async def test_a_changed_thinking_block_is_refused_by_the_fake(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    anthropic_server.add(FakeReply(reasoning="first thought", content="hi"))
    first = await anthropic_model.request(a_request())
    data = json.loads(json.dumps(first.message.provider_data))
    data["anthropic"]["content"][0]["thinking"] = "another thought"
    tampered = dataclasses.replace(first.message, provider_data=data)
    with pytest.raises(ModelBadRequestError, match="invalid signature"):
        await anthropic_model.request(
            ModelRequest(messages=(Message.user("q"), tampered, Message.user("q2")))
        )


@pytest.mark.parametrize("name", ["anthropic-thinking", "anthropic-redacted-thinking"])
async def test_recorded_blocks_go_back_exactly(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel, name: str
) -> None:
    exchange = _exchange(name)
    anthropic_server.add(recorded(exchange), FakeReply.text("ok"))
    first = await anthropic_model.request(a_request())
    history = (Message.user("hello"), _stored(first.message), Message.user("thanks"))
    await anthropic_model.request(ModelRequest(messages=history))
    sent = anthropic_server.requests[1].body["messages"][1]
    assert sent == {"role": "assistant", "content": exchange["response"]["body"]["content"]}


async def test_streamed_thinking_goes_back_whole_and_signed(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    exchange = _exchange("anthropic-stream-thinking")
    anthropic_server.add(recorded(exchange, chunk_size=5), FakeReply.text("ok"))
    first = final_response(await collect(anthropic_model, a_request()))
    history = (Message.user("hello"), _stored(first.message), Message.user("thanks"))
    await anthropic_model.request(ModelRequest(messages=history))
    thinking, text = anthropic_server.requests[1].body["messages"][1]["content"]
    expected = exchange["expected_normalized"]
    assert thinking["type"] == "thinking"
    assert thinking["thinking"] == expected["reasoning"]
    assert thinking["signature"].startswith("EvMCCkYICxgCKkCHP2cSuEdcJK")
    assert len(thinking["signature"]) > 400
    assert text == _text(expected["content"])


async def test_server_tool_blocks_go_back_in_place(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    exchange = _exchange("anthropic-stream-server-tool-and-client-tool")
    anthropic_server.add(recorded(exchange, chunk_size=11), FakeReply.text("ok"))
    first = final_response(await collect(anthropic_model, a_request()))
    [call] = first.message.tool_calls
    history = (
        Message.user("hello"),
        _stored(first.message),
        Message.tool(call.id, '{"rate": 0.92}'),
    )
    await anthropic_model.request(ModelRequest(messages=history))
    blocks = anthropic_server.requests[1].body["messages"][1]["content"]
    started = [
        json.loads(e["data"])["content_block"]
        for e in exchange["response"]["sse_events"]
        if e.get("event") == "content_block_start"
    ]
    assert [b["type"] for b in blocks] == [b["type"] for b in started]
    assert blocks[0] == _text(
        "Let me search for a tool that can provide current exchange rate information."
    )
    assert blocks[1] == {
        **started[1],
        "input": {"query": "USD EUR exchange rate currency conversion"},
    }
    assert blocks[2] == started[2]  # the server's result, verbatim
    assert blocks[3]["text"].startswith("I found the right tool!")
    assert blocks[4] == {**started[4], "input": {"from_currency": "USD", "to_currency": "EUR"}}


async def test_an_edited_message_keeps_its_thinking_first(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    call = ToolCall(id="toolu_a", name="weather", arguments='{"city":"Oslo"}')
    first_reply = FakeReply(reasoning="think", content="Let me look.", calls=(call,))
    anthropic_server.add(first_reply, FakeReply.text("ok"))
    first = await anthropic_model.request(a_request())
    edited = dataclasses.replace(first.message, content="Looking it up.")
    history = (Message.user("hello"), edited, Message.tool("toolu_a", "sunny"))
    await anthropic_model.request(ModelRequest(messages=history))
    blocks = anthropic_server.requests[1].body["messages"][1]["content"]
    assert [b["type"] for b in blocks] == ["thinking", "text", "tool_use"]
    assert blocks[0]["signature"] == signature("think")
    assert blocks[1]["text"] == "Looking it up."


# --- scripted answers, both ways ------------------------------------------------------------


async def test_stream_and_request_give_the_same_message(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    reply = FakeReply.tool_calls(
        [("weather", '{"city":"Paris"}'), ("weather", '{"city":"Rome"}')], content="Checking."
    )
    reply = dataclasses.replace(reply, reasoning="Two cities, two calls.")
    anthropic_server.add(reply, reply)
    whole = await anthropic_model.request(a_request())
    events = await collect(anthropic_model, a_request())
    streamed = final_response(events)
    assert streamed.message == whole.message
    assert (streamed.finish_reason, streamed.usage) == (whole.finish_reason, whole.usage)
    assert [c.arguments for c in whole.message.tool_calls] == [
        '{"city":"Paris"}',
        '{"city":"Rome"}',
    ]
    fragments = [e for e in events if isinstance(e, ToolCallDelta) and e.index == 1]
    assert fragments[0] == ToolCallDelta(index=1, id="call_1", name="weather")
    assert len(fragments) > 2  # the arguments arrived in pieces
    assert any(isinstance(e, TextDelta) for e in events)
    assert any(isinstance(e, ReasoningDelta) for e in events)


@pytest.mark.parametrize(
    ("sent", "finish"),
    [
        ("stop", "stop"),  # end_turn
        ("stop_sequence", "stop"),
        ("length", "length"),  # max_tokens
        ("model_context_window_exceeded", "length"),
        ("refusal", "refusal"),
        ("pause_turn", "other"),
        ("something_new", "other"),
    ],
)
@pytest.mark.parametrize("streaming", [False, True], ids=["request", "stream"])
async def test_stop_reasons(
    anthropic_server: FakeAnthropicServer,
    anthropic_model: AnthropicModel,
    sent: str,
    finish: str,
    streaming: bool,
) -> None:
    anthropic_server.add(FakeReply.text("partial", finish_reason=sent))
    response = await _answer(anthropic_model, a_request(), streaming)
    raw = {"stop": "end_turn", "length": "max_tokens"}.get(sent, sent)
    assert (response.finish_reason, response.raw_finish_reason) == (finish, raw)
    assert response.message.content == "partial"
    assert (response.refusal is not None) == (finish == "refusal")


def _events(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


_START = {
    "type": "message_start",
    "message": {"model": "m", "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}},
}
_TEXT_START = {
    "type": "content_block_start",
    "index": 0,
    "content_block": {"type": "text", "text": "ok"},
}


async def test_refusal_explanation_is_the_refusal(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    details = {"type": "refusal", "category": "cyber", "explanation": "Not this one."}
    stop = {"stop_reason": "refusal", "stop_details": details}
    end = {"type": "message_delta", "delta": stop, "usage": {"output_tokens": 2}}
    anthropic_server.add(FakeReply.raw(200, SSE, _events(_START, end)))
    response = final_response(await collect(anthropic_model, a_request()))
    assert (response.finish_reason, response.refusal) == ("refusal", "Not this one.")
    assert response.message.content is None


async def test_streamed_usage_counts_cache_reads_writes_and_thinking(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    start = {
        "type": "message_start",
        "message": {
            "model": "m",
            "content": [],
            "usage": {
                "input_tokens": 7,
                "cache_read_input_tokens": 1000,
                "cache_creation_input_tokens": 200,
                "output_tokens": 1,
            },
        },
    }
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {
            "output_tokens": 90,
            "input_tokens": None,
            "cache_read_input_tokens": 1100,
            "output_tokens_details": {"thinking_tokens": 60},
        },
    }
    text = [_TEXT_START, {"type": "content_block_stop", "index": 0}]
    anthropic_server.add(FakeReply.raw(200, SSE, _events(start, *text, end)))
    response = final_response(await collect(anthropic_model, a_request()))
    usage = response.usage
    assert (usage.input_tokens, usage.cached_tokens) == (7 + 1100 + 200, 1100)
    assert (usage.output_tokens, usage.reasoning_tokens, usage.requests) == (90, 60, 1)
    assert response.message.content == "ok"


async def test_stream_closed_early_is_clean(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    anthropic_server.add(FakeReply.text("a long answer in several pieces"), FakeReply.text("next"))
    stream = cast(AsyncGenerator[StreamEvent], anthropic_model.stream(a_request()))
    async for _ in stream:
        break
    await stream.aclose()
    assert (await anthropic_model.request(a_request())).message.content == "next"


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind", "cls", "retryable"),
    [
        (400, "invalid_request_error", ModelBadRequestError, False),
        (401, "authentication_error", ModelAuthenticationError, False),
        (402, "billing_error", ModelAPIError, False),
        (403, "permission_error", ModelAuthenticationError, False),
        (404, "not_found_error", ModelNotFoundError, False),
        (413, "request_too_large", ModelBadRequestError, False),
        (429, "rate_limit_error", ModelRateLimitError, True),
        (500, "api_error", ModelServerError, True),
        (503, "api_error", ModelServerError, True),
        (504, "timeout_error", ModelServerError, True),
        (529, "overloaded_error", ModelOverloadedError, True),
    ],
)
@pytest.mark.parametrize("streaming", [False, True], ids=["request", "stream"])
async def test_status_classes(
    anthropic_server: FakeAnthropicServer,
    anthropic_model: AnthropicModel,
    status: int,
    kind: str,
    cls: type[ModelAPIError],
    retryable: bool,
    streaming: bool,
) -> None:
    anthropic_server.add(error(status, "it went wrong", type=kind, request_id="req_anthropic"))
    with pytest.raises(ModelAPIError) as caught:
        await _answer(anthropic_model, a_request(), streaming)
    found = caught.value
    assert (type(found), found.status, found.retryable) == (cls, status, retryable)
    assert found.provider_type == kind
    assert "it went wrong" in str(found)
    assert "req_anthropic" in str(found)
    assert "it went wrong" in (found.body or "")


async def test_retry_after_and_should_retry_headers(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    anthropic_server.add(
        error(429, "slow down", type="rate_limit_error", headers={"retry-after": "17"}),
        error(500, "broken", headers={"x-should-retry": "false"}),
        error(400, "odd", type="invalid_request_error", headers={"x-should-retry": "true"}),
    )
    errors: list[ModelAPIError] = []
    for _ in range(3):
        with pytest.raises(ModelAPIError) as caught:
            await anthropic_model.request(a_request())
        errors.append(caught.value)
    limited, broken, odd = errors
    assert (type(limited), limited.retryable, limited.retry_after) == (
        ModelRateLimitError,
        True,
        17.0,
    )
    assert (broken.retryable, odd.retryable) == (False, True)


async def test_messages_say_what_to_fix(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    anthropic_server.add(
        error(401, "invalid x-api-key", type="authentication_error"),
        error(403, "no access", type="permission_error"),
        error(404, "model: test-model", type="not_found_error"),
    )
    with pytest.raises(ModelAuthenticationError, match="ANTHROPIC_API_KEY"):
        await anthropic_model.request(a_request())
    with pytest.raises(ModelAuthenticationError, match="permissions"):
        await anthropic_model.request(a_request())
    with pytest.raises(ModelNotFoundError) as caught:
        await anthropic_model.request(a_request())
    base_url = anthropic_model.base_url
    assert f"model 'test-model' not found at {base_url}" in str(caught.value)
    assert "check the model name" in str(caught.value)


@pytest.mark.parametrize("streaming", [False, True], ids=["request", "stream"])
async def test_prompt_too_long_is_context_overflow(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel, streaming: bool
) -> None:
    said = "prompt is too long: 210000 tokens > 200000 maximum"
    anthropic_server.add(
        error(400, said, type="invalid_request_error", headers={"x-should-retry": "true"})
    )
    with pytest.raises(ContextOverflowError) as caught:
        await _answer(anthropic_model, a_request(), streaming)
    assert not caught.value.retryable
    assert said in str(caught.value)
    assert "shorten the conversation" in str(caught.value)


@pytest.mark.parametrize(
    ("kind", "retryable"),
    [("overloaded_error", True), ("api_error", True), ("invalid_request_error", False)],
)
@pytest.mark.parametrize("pieces", [None, 1, 7], ids=["whole", "1-byte", "7-byte"])
async def test_error_event_inside_a_stream(
    anthropic_server: FakeAnthropicServer,
    anthropic_model: AnthropicModel,
    kind: str,
    retryable: bool,
    pieces: int | None,
) -> None:
    reply = error_event(kind, "it broke", text="Hel")
    body = b"".join(reply.body or ())
    anthropic_server.add(FakeReply.raw(200, SSE, body, chunk_size=pieces))
    events: list[StreamEvent] = []
    with pytest.raises(ModelStreamError) as caught:
        await collect(anthropic_model, a_request(request_id="req_s"), into=events)
    found = caught.value
    assert (found.status, found.retryable, found.request_id) == (200, retryable, "req_s")
    assert found.provider_type == kind
    assert "it broke" in str(found)
    assert events == [TextDelta(text="Hel")]  # what came before the error was delivered


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b'{"type": "message"}',
        _events(_START),
        _events(_START, _TEXT_START),
        b"event: message_start\ndata: {not json\n\n",
    ],
    ids=["empty", "json-not-sse", "no-stop-reason", "cut-after-text", "bad-event"],
)
async def test_unreadable_or_unfinished_stream(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel, body: bytes
) -> None:
    anthropic_server.add(FakeReply.raw(200, SSE, body))
    with pytest.raises(ModelResponseError) as caught:
        await collect(anthropic_model, a_request())
    assert caught.value.retryable
    assert "could not understand" in str(caught.value)


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ({"content-type": "application/json"}, b'{"content": ['),
        ({"content-type": "text/plain"}, b"hello"),
        ({"content-type": "application/json"}, b'{"type": "message", "role": "assistant"}'),
    ],
    ids=["truncated-json", "not-json", "no-content"],
)
async def test_unreadable_answer(
    anthropic_server: FakeAnthropicServer,
    anthropic_model: AnthropicModel,
    headers: dict[str, str],
    body: bytes,
) -> None:
    anthropic_server.add(FakeReply.raw(200, headers, body))
    with pytest.raises(ModelResponseError, match="could not understand"):
        await anthropic_model.request(a_request())


# --- transport failures ---------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("streaming", [False, True], ids=["request", "stream"])
async def test_connection_refused(streaming: bool) -> None:
    base_url = f"http://127.0.0.1:{_free_port()}"
    async with AnthropicModel("m", base_url=base_url, api_key="k") as model:
        with pytest.raises(ModelConnectionError) as caught:
            await _answer(model, a_request(), streaming)
    assert type(caught.value) is ModelConnectionError
    assert caught.value.retryable
    assert base_url in str(caught.value)


async def test_connection_reset_mid_stream(
    anthropic_server: FakeAnthropicServer, anthropic_model: AnthropicModel
) -> None:
    whole = b"".join(error_event(text="Hel").body or ())
    cut = whole.index(b"event: error")
    anthropic_server.add(FakeReply.raw(200, SSE, [whole[:cut], whole[cut:]], reset_after=cut))
    events: list[StreamEvent] = []
    with pytest.raises(ModelConnectionError) as caught:
        await collect(anthropic_model, a_request(), into=events)
    assert type(caught.value) is ModelConnectionError
    assert events == [TextDelta(text="Hel")]


@pytest.mark.parametrize("streaming", [False, True], ids=["request", "stream"])
async def test_first_byte_too_late_is_a_timeout(
    anthropic_server: FakeAnthropicServer, streaming: bool
) -> None:
    anthropic_server.add(dataclasses.replace(FakeReply.text("late"), delay_s=5))
    async with AnthropicModel(
        "m", base_url=anthropic_server.base_url, api_key="k", timeout_s=0.3
    ) as model:
        with pytest.raises(ModelTimeoutError) as caught:
            await _answer(model, a_request(), streaming)
    assert caught.value.retryable
    assert "0.3 s" in str(caught.value)


async def test_an_output_schema_is_sent_as_native_structured_output(
    anthropic_server: FakeAnthropicServer, anthropic_server_model: AnthropicModel
) -> None:
    anthropic_server.add(FakeReply.text('{"city": "Paris"}'))
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    settings = ModelSettings(response_format=ResponseFormat(name="place", schema=schema))
    request = ModelRequest(messages=(Message.user("Where?"),), settings=settings)
    await anthropic_server_model.request(request)
    sent = anthropic_server.requests[-1].body
    assert sent["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
