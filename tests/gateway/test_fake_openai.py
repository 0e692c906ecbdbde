"""FakeOpenAIServer: scripted replies over real HTTP, read with the stdlib and OpenAIModel."""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest

from harness.core.messages import ToolCall
from harness.errors import ModelServerError
from harness.gateway.model import ToolCallDelta
from harness.gateway.providers.openai import OpenAIModel
from harness.testing.fake_openai import FakeOpenAIServer, FakeReply

from .conftest import a_request, collect, final_response


def _post(
    server: FakeOpenAIServer, body: dict[str, Any] | bytes, path: str = "/v1/chat/completions"
) -> tuple[int, dict[str, str], bytes]:
    port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        connection.request(
            "POST", path, payload, {"content-type": "application/json", "x-test": "yes"}
        )
        response = connection.getresponse()
        headers = {name.lower(): value for name, value in response.getheaders()}
        return response.status, headers, response.read()
    finally:
        connection.close()


def _sse_chunks(raw: bytes) -> list[dict[str, Any]]:
    lines = [line[len(b"data: ") :] for line in raw.split(b"\n") if line.startswith(b"data: ")]
    assert lines[-1] == b"[DONE]"
    return [json.loads(line) for line in lines[:-1]]


def test_text_reply_as_json(server: FakeOpenAIServer) -> None:
    server.add(FakeReply.text("hi", reasoning="think", input_tokens=3, output_tokens=2))
    status, headers, body = _post(server, {"model": "m1", "messages": []})
    completion = json.loads(body)
    assert (status, headers["content-type"]) == (200, "application/json")
    assert completion["model"] == "m1"
    assert completion["choices"][0]["message"] == {
        "role": "assistant",
        "content": "hi",
        "reasoning_content": "think",
    }
    assert completion["choices"][0]["finish_reason"] == "stop"
    assert completion["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def test_recorded_requests(server: FakeOpenAIServer) -> None:
    server.add(FakeReply.text("hi"))
    _post(server, {"model": "m", "messages": [{"role": "user", "content": "yo"}]})
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.body["messages"] == [{"role": "user", "content": "yo"}]
    assert request.headers["x-test"] == "yes"


def test_streamed_tool_call_comes_in_fragments(server: FakeOpenAIServer) -> None:
    server.add(FakeReply.tool_call("weather", {"city": "Paris", "unit": "C"}, id="call_w"))
    status, headers, body = _post(
        server, {"stream": True, "messages": [], "stream_options": {"include_usage": True}}
    )
    chunks = _sse_chunks(body)
    assert (status, headers["content-type"]) == (200, "text/event-stream")
    assert headers["transfer-encoding"] == "chunked"
    calls = [
        c
        for chunk in chunks
        for choice in chunk["choices"]
        for c in choice["delta"].get("tool_calls", [])
    ]
    assert calls[0]["id"] == "call_w"
    assert calls[0]["function"]["name"] == "weather"
    fragments = [c["function"]["arguments"] for c in calls]
    assert len([f for f in fragments if f]) >= 2
    assert json.loads("".join(fragments)) == {"city": "Paris", "unit": "C"}
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["total_tokens"] == 15


def test_stream_without_usage_request(server: FakeOpenAIServer) -> None:
    server.add(FakeReply.text("hello there"))
    chunks = _sse_chunks(_post(server, {"stream": True, "messages": []})[2])
    assert all("usage" not in chunk for chunk in chunks)
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == "hello there"


def test_raw_reply_is_sent_as_given(server: FakeOpenAIServer) -> None:
    body = b'{"anything": true}'
    server.add(
        FakeReply.raw(
            418,
            {"content-type": "application/json", "x-extra": "1", "content-length": "999"},
            body,
            chunk_size=4,
        )
    )
    status, headers, received = _post(server, {"messages": []})
    assert (status, received, headers["x-extra"]) == (418, body, "1")
    assert headers["transfer-encoding"] == "chunked"
    assert "content-length" not in headers


def test_script_function_sees_the_body(server: FakeOpenAIServer) -> None:
    def answer(body: Any) -> FakeReply:
        return FakeReply.text(f"you said {body['messages'][-1]['content']}")

    with FakeOpenAIServer(answer) as scripted:
        for word in ("a", "b"):
            completion = json.loads(_post(scripted, {"messages": [{"content": word}]})[2])
            assert completion["choices"][0]["message"]["content"] == f"you said {word}"


def test_exhausted_script_and_unknown_route(server: FakeOpenAIServer) -> None:
    status, _, body = _post(server, {"messages": []})
    assert status == 500
    assert "no reply left for request #1" in json.loads(body)["error"]["message"]
    assert _post(server, {}, path="/v1/embeddings")[0] == 404


def test_models_endpoint() -> None:
    with FakeOpenAIServer(model="tiny") as server:
        port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        connection.request("GET", "/v1/models")
        listing = json.loads(connection.getresponse().read())
        connection.close()
    assert [m["id"] for m in listing["data"]] == ["tiny"]
    assert server.requests[0].method == "GET"


def test_start_stop_and_base_url() -> None:
    server = FakeOpenAIServer([FakeReply.text("x")])
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.base_url
    server.start()
    try:
        assert server.base_url.startswith("http://127.0.0.1:")
        assert server.base_url.endswith("/v1")
    finally:
        server.stop()
    server.stop()  # stopping twice is harmless


async def test_with_openai_model(server: FakeOpenAIServer, model: OpenAIModel) -> None:
    server.add(
        FakeReply.text("hello", reasoning="greet"),
        FakeReply.tool_calls(
            [ToolCall(id="c1", name="ls", arguments="{}"), ("cat", {"path": "a.txt"})]
        ),
    )
    answer = await model.request(a_request())
    assert (answer.message.content, answer.message.reasoning) == ("hello", "greet")
    events = await collect(model, a_request())
    calls = final_response(events).message.tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("c1", "ls", "{}"),
        ("call_1", "cat", '{"path": "a.txt"}'),
    ]
    assert {e.index for e in events if isinstance(e, ToolCallDelta)} == {0, 1}


async def test_exhausted_script_through_openai_model(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    with pytest.raises(ModelServerError, match="no reply left"):
        await model.request(a_request())
