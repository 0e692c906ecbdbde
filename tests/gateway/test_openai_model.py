"""OpenAIModel: request building, headers, errors and edge cases, over real HTTP."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import AsyncGenerator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import cast

import pytest

from harness.core.messages import Message, ToolCall, ToolDefinition
from harness.errors import (
    ContextOverflowError,
    ModelAPIError,
    ModelAuthenticationError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelOverloadedError,
    ModelResponseError,
    ModelServerError,
    ModelStreamError,
    ModelTimeoutError,
)
from harness.gateway.model import (
    Model,
    ModelRequest,
    ModelSettings,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from harness.gateway.providers._http_errors import parse_retry_after
from harness.gateway.providers.openai import OpenAIModel
from harness.testing.fake_openai import FakeOpenAIServer, FakeReply

from .conftest import PROVIDERS, a_request, collect, final_response, served_reply

SSE = {"content-type": "text/event-stream"}


def test_name_and_protocol() -> None:
    assert OpenAIModel("gpt-x", base_url="http://127.0.0.1:9/v1").name == "openai:gpt-x"
    labelled = OpenAIModel("gpt-x", base_url="http://127.0.0.1:9/v1", label="local")
    assert labelled.name == "local"
    assert isinstance(labelled, Model)
    assert labelled.base_url == "http://127.0.0.1:9/v1"


# --- X-Request-ID -------------------------------------------------------------------------


async def test_request_id_is_sent_and_returned(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.add(FakeReply.text("a"), FakeReply.text("b"))
    given = await model.request(a_request(request_id="req_given"))
    fresh = await model.request(a_request())
    sent = [r.headers["x-request-id"] for r in server.requests]
    assert sent[0] == given.request_id == "req_given"
    assert sent[1] == fresh.request_id
    assert fresh.request_id is not None
    assert fresh.request_id.startswith("req_")


async def test_request_id_in_a_stream(server: FakeOpenAIServer, model: OpenAIModel) -> None:
    server.add(FakeReply.text("a"))
    response = final_response(await collect(model, a_request(request_id="req_s")))
    assert server.requests[0].headers["x-request-id"] == response.request_id == "req_s"


# --- request body ---------------------------------------------------------------------------

WEATHER = ToolDefinition(
    name="weather",
    description="Weather of a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
CONVERSATION = (
    Message.system("Be brief."),
    Message.user("Weather in Paris?"),
    Message.assistant(None, [ToolCall(id="call_1", name="weather", arguments='{"city":"Paris"}')]),
    Message.tool("call_1", "sunny", name="weather"),
    Message.assistant("It is sunny.", reasoning="The tool said so."),
)


async def test_request_body(server: FakeOpenAIServer, model: OpenAIModel) -> None:
    server.add(FakeReply.text("ok"))
    settings = ModelSettings(
        temperature=0.2,
        top_p=0.9,
        max_output_tokens=64,
        seed=7,
        stop=("END",),
        parallel_tool_calls=False,
        extra_body={"top_k": 20},
    )
    await model.request(ModelRequest(messages=CONVERSATION, tools=(WEATHER,), settings=settings))
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].body == {
        "model": "test-model",
        "stream": False,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {"role": "assistant", "content": "It is sunny."},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "Weather of a city.",
                    "parameters": WEATHER.parameters,
                },
            }
        ],
        "temperature": 0.2,
        "top_p": 0.9,
        "max_tokens": 64,
        "seed": 7,
        "stop": ["END"],
        "parallel_tool_calls": False,
        "top_k": 20,
    }


async def test_unset_settings_are_not_sent(server: FakeOpenAIServer, model: OpenAIModel) -> None:
    server.add(FakeReply.text("ok"), FakeReply.text("ok"))
    await model.request(a_request())
    # parallel_tool_calls without tools is rejected by OpenAI, so it is left out
    settings = ModelSettings(parallel_tool_calls=True)
    await collect(model, ModelRequest(messages=(Message.user("hi"),), settings=settings))
    plain, streamed = (r.body for r in server.requests)
    assert plain == {
        "model": "test-model",
        "stream": False,
        "messages": [{"role": "user", "content": "hello"}],
    }
    assert streamed == {
        "model": "test-model",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "hi"}],
    }


async def test_messages_match_a_recorded_request(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    recorded = json.loads((PROVIDERS / "openai-chat-tool-result-followup.json").read_text())
    wire = recorded["request"]["body"]["messages"]
    call = wire[2]["tool_calls"][0]
    messages = (
        Message.system(wire[0]["content"]),
        Message.user(wire[1]["content"]),
        Message.assistant(
            None,
            [
                ToolCall(
                    id=call["id"],
                    name=call["function"]["name"],
                    arguments=call["function"]["arguments"],
                )
            ],
        ),
        Message.tool(wire[3]["tool_call_id"], wire[3]["content"]),
    )
    server.add(served_reply(recorded))
    await model.request(ModelRequest(messages=messages))
    assert server.requests[0].body["messages"] == wire


async def test_provider_data_goes_back_to_the_server(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    gemini = json.loads((PROVIDERS / "gemini-openai-compat-empty-tool-call-id.json").read_text())
    server.add(served_reply(gemini), FakeReply.text("done"))
    first = await model.request(a_request())
    call = first.message.tool_calls[0]
    history = (Message.user("hello"), first.message, Message.tool(call.id, "12:00"))
    await model.request(ModelRequest(messages=history))
    sent = server.requests[1].body["messages"][1]
    recorded = gemini["response"]["body"]["choices"][0]["message"]
    assert sent["extra_content"] == recorded["extra_content"]
    assert sent["tool_calls"][0]["id"] == call.id != ""


# --- scripted answers, both ways -------------------------------------------------------------


async def test_stream_and_request_give_the_same_message(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    reply = FakeReply.tool_calls(
        [("weather", {"city": "Paris"}), ("weather", '{"city": "Rome"}')], content="Checking."
    )
    server.add(reply, reply)
    whole = await model.request(a_request())
    events = await collect(model, a_request())
    streamed = final_response(events)
    assert streamed.message == whole.message
    assert (streamed.finish_reason, streamed.usage) == (whole.finish_reason, whole.usage)
    assert [c.arguments for c in whole.message.tool_calls] == [
        '{"city": "Paris"}',
        '{"city": "Rome"}',
    ]
    fragments = [e for e in events if isinstance(e, ToolCallDelta) and e.index == 0]
    assert len(fragments) > 2  # the arguments arrived in pieces
    assert any(isinstance(e, TextDelta) for e in events)


async def test_tool_calls_with_stop_are_kept(server: FakeOpenAIServer, model: OpenAIModel) -> None:
    reply = FakeReply.tool_call("weather", {"city": "Oslo"})
    server.add(FakeReply(calls=reply.calls, finish_reason="stop"))
    response = await model.request(a_request())
    assert [c.name for c in response.message.tool_calls] == ["weather"]
    assert (response.finish_reason, response.raw_finish_reason) == ("tool_calls", "stop")


async def test_stream_closed_early_is_clean(server: FakeOpenAIServer, model: OpenAIModel) -> None:
    server.add(FakeReply.text("a long answer in several pieces"), FakeReply.text("next"))
    stream = cast(AsyncGenerator[StreamEvent], model.stream(a_request()))
    async for _ in stream:
        break
    await stream.aclose()
    assert (await model.request(a_request())).message.content == "next"


# --- transport failures ---------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("streaming", [False, True])
async def test_connection_refused(streaming: bool) -> None:
    base_url = f"http://127.0.0.1:{_free_port()}/v1"
    async with OpenAIModel("m", base_url=base_url) as model:
        with pytest.raises(ModelConnectionError) as caught:
            await (collect(model, a_request()) if streaming else model.request(a_request()))
    error = caught.value
    assert type(error) is ModelConnectionError
    assert error.retryable
    assert base_url in str(error)
    assert "llama-server" in str(error)


def _serve_then_hang_up(listener: socket.socket, head: bytes) -> None:
    connection, _ = listener.accept()
    with connection:
        received = b""
        while b"\r\n\r\n" not in received:
            received += connection.recv(65536)
        headers, _, body = received.partition(b"\r\n\r\n")
        length = int(headers.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        while len(body) < length:  # read it all, so that closing sends FIN, not RST
            body += connection.recv(65536)
        connection.sendall(head)


async def test_connection_dropped_mid_stream() -> None:
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 5000\r\n\r\n"
        b'data: {"choices": [{"index": 0, "delta": {"content": "Hel"}}]}\n\n'
    )
    with socket.create_server(("127.0.0.1", 0)) as listener:
        thread = threading.Thread(target=_serve_then_hang_up, args=(listener, head))
        thread.start()
        base_url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        events: list[StreamEvent] = []
        async with OpenAIModel("m", base_url=base_url) as model:
            with pytest.raises(ModelConnectionError) as caught:
                await collect(model, a_request(), into=events)
        thread.join()
    assert type(caught.value) is ModelConnectionError
    assert "failed" in str(caught.value)
    assert base_url in str(caught.value)
    assert events == [TextDelta(text="Hel")]


@pytest.mark.parametrize("streaming", [False, True])
async def test_first_byte_too_late_is_a_timeout(server: FakeOpenAIServer, streaming: bool) -> None:
    server.add(FakeReply.raw(200, SSE if streaming else {}, b"{}", delay_s=5))
    async with OpenAIModel("m", base_url=server.base_url, timeout_s=0.3) as model:
        with pytest.raises(ModelTimeoutError) as caught:
            await (collect(model, a_request()) if streaming else model.request(a_request()))
    assert caught.value.retryable
    assert "0.3 s" in str(caught.value)


# --- unreadable answers ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ({"content-type": "application/json"}, b'{"choices": [{"message": '),
        ({"content-type": "text/plain"}, b"hello"),
        ({"content-type": "application/json"}, b'{"object": "chat.completion"}'),
    ],
    ids=["truncated-json", "not-json", "no-choices"],
)
async def test_unreadable_answer(
    server: FakeOpenAIServer, model: OpenAIModel, headers: dict[str, str], body: bytes
) -> None:
    server.add(FakeReply.raw(200, headers, body))
    with pytest.raises(ModelResponseError, match="could not understand"):
        await model.request(a_request())


@pytest.mark.parametrize(
    "body",
    [b"data: {not json\n\n", b"", b'{"choices": []}'],
    ids=["bad-chunk", "empty", "json-not-sse"],
)
async def test_unreadable_stream(server: FakeOpenAIServer, model: OpenAIModel, body: bytes) -> None:
    server.add(FakeReply.raw(200, SSE, body))
    with pytest.raises(ModelResponseError):
        await collect(model, a_request())


# --- HTTP errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "cls", "retryable"),
    [
        (400, ModelBadRequestError, False),
        (403, ModelAuthenticationError, False),
        (408, ModelAPIError, True),
        (409, ModelAPIError, True),
        (413, ModelAPIError, False),
        (422, ModelBadRequestError, False),
        (425, ModelAPIError, True),
        (503, ModelServerError, True),
        (504, ModelServerError, True),
        (529, ModelOverloadedError, True),
    ],
)
async def test_status_classes(
    server: FakeOpenAIServer,
    model: OpenAIModel,
    status: int,
    cls: type[ModelAPIError],
    retryable: bool,
) -> None:
    server.add(FakeReply.error(status, "it went wrong", type="some_type"))
    with pytest.raises(ModelAPIError) as caught:
        await model.request(a_request())
    error = caught.value
    assert (type(error), error.status, error.retryable) == (cls, status, retryable)
    assert "it went wrong" in str(error)
    assert error.provider_type == "some_type"


async def test_messages_say_what_to_fix(server: FakeOpenAIServer, model: OpenAIModel) -> None:
    server.add(FakeReply.error(401, "bad key"), FakeReply.error(404, "no such model"))
    with pytest.raises(ModelAuthenticationError, match="environment variable"):
        await model.request(a_request())
    with pytest.raises(ModelAPIError) as caught:
        await model.request(a_request())
    assert f"model 'test-model' not found at {server.base_url}" in str(caught.value)
    assert "no such model" in str(caught.value)


@pytest.mark.parametrize(
    "said",
    [
        "the request (9000 tokens) exceeds the available context size (8192 tokens)",
        "This model's maximum context length is 128000 tokens.",
        "prompt is too long: 210000 tokens > 200000 maximum",
    ],
)
@pytest.mark.parametrize("status", [400, 500])
async def test_context_overflow_is_never_retryable(
    server: FakeOpenAIServer, model: OpenAIModel, said: str, status: int
) -> None:
    server.add(FakeReply.error(status, said, headers={"x-should-retry": "true"}))
    with pytest.raises(ContextOverflowError) as caught:
        await model.request(a_request())
    assert not caught.value.retryable
    assert caught.value.status == status
    assert said in str(caught.value)


async def test_x_should_retry_overrides(server: FakeOpenAIServer, model: OpenAIModel) -> None:
    server.add(
        FakeReply.error(500, "no", headers={"x-should-retry": "false"}),
        FakeReply.error(400, "yes", headers={"x-should-retry": "true"}),
    )
    for retryable in (False, True):
        with pytest.raises(ModelAPIError) as caught:
            await model.request(a_request())
        assert caught.value.retryable is retryable


async def test_retry_after_headers(server: FakeOpenAIServer, model: OpenAIModel) -> None:
    server.add(
        FakeReply.error(429, "slow down", headers={"retry-after-ms": "1500"}),
        FakeReply.error(503, "loading", headers={"retry-after": "7"}),
    )
    waits = []
    for _ in range(2):
        with pytest.raises(ModelAPIError) as caught:
            await model.request(a_request())
        waits.append(caught.value.retry_after)
    assert waits == [1.5, 7.0]


def test_retry_after_parsing() -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"retry-after": later}, now) == 30.0
    assert (
        parse_retry_after(
            {"retry-after": format_datetime(now, usegmt=True)}, now + timedelta(seconds=5)
        )
        == 0.0
    )
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-3"}) is None
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({}) is None


async def test_html_error_page(server: FakeOpenAIServer, model: OpenAIModel) -> None:
    page = b"<html><head><title>502 Bad Gateway</title></head><body>" + b"x" * 5000 + b"</body>"
    server.add(FakeReply.raw(502, {"content-type": "text/html"}, page))
    with pytest.raises(ModelServerError) as caught:
        await model.request(a_request())
    assert caught.value.retryable
    assert "502 Bad Gateway" in str(caught.value)
    assert len(str(caught.value)) < 400


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        ({"message": "upstream overloaded", "code": 503}, True),
        ({"message": "bad tool call", "code": "tool_use_failed", "status_code": 400}, False),
        ({"message": "something broke"}, True),
    ],
)
async def test_error_event_in_a_stream(
    server: FakeOpenAIServer, model: OpenAIModel, error: dict[str, object], retryable: bool
) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "Hel"}}]}
    body = (
        f"data: {json.dumps(chunk)}\n\nevent: error\ndata: {json.dumps({'error': error})}\n\n"
    ).encode()
    server.add(FakeReply.raw(200, SSE, body))
    events: list[StreamEvent] = []
    with pytest.raises(ModelStreamError) as caught:
        await collect(model, a_request(), into=events)
    assert (caught.value.status, caught.value.retryable) == (200, retryable)
    assert str(error["message"]) in str(caught.value)
    assert events == [TextDelta(text="Hel")]
