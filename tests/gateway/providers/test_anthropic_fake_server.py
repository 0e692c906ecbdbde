"""FakeAnthropicServer: scripted replies over real HTTP, read with the stdlib."""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest

from harness.core.messages import ToolCall
from harness.testing import FakeAnthropicServer, FakeReply, fake_anthropic

from .conftest import PROVIDERS


def _call(
    server: FakeAnthropicServer,
    body: dict[str, Any] | bytes | None,
    path: str = "/v1/messages",
    method: str = "POST",
) -> tuple[int, dict[str, str], bytes]:
    port = int(server.base_url.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        payload = body if isinstance(body, bytes | None) else json.dumps(body).encode()
        headers = {"content-type": "application/json", "x-test": "yes"}
        connection.request(method, path, payload, headers)
        response = connection.getresponse()
        got = {name.lower(): value for name, value in response.getheaders()}
        return response.status, got, response.read()
    finally:
        connection.close()


def _events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of each SSE event."""
    events = []
    for chunk in raw.decode().split("\n\n"):
        if chunk:
            name, data = chunk.split("\n")
            assert name.startswith("event: ")
            assert data.startswith("data: ")
            events.append((name[len("event: ") :], json.loads(data[len("data: ") :])))
    return events


REPLY = FakeReply(
    content="Looking.",
    reasoning="Paris first.",
    calls=(ToolCall(id="toolu_1", name="weather", arguments='{"city":"Paris"}'),),
    finish_reason="tool_calls",
    input_tokens=12,
    output_tokens=7,
)


@pytest.fixture
def server() -> Any:
    with FakeAnthropicServer(model="claude-fake") as fake:
        yield fake


def test_reply_as_a_message(server: FakeAnthropicServer) -> None:
    server.add(REPLY)
    status, headers, raw = _call(server, {"model": "m1", "max_tokens": 5, "messages": []})
    assert (status, headers["content-type"]) == (200, "application/json")
    assert json.loads(raw) == {
        "id": "msg_fake_1",
        "type": "message",
        "role": "assistant",
        "model": "m1",
        "content": [
            {
                "type": "thinking",
                "thinking": "Paris first.",
                "signature": fake_anthropic.signature("Paris first."),
            },
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 7},
    }
    recorded = server.requests[0]
    assert (recorded.method, recorded.path, recorded.headers["x-test"]) == (
        "POST",
        "/v1/messages",
        "yes",
    )
    assert recorded.body == {"model": "m1", "max_tokens": 5, "messages": []}


def test_reply_as_a_stream(server: FakeAnthropicServer) -> None:
    server.add(REPLY)
    status, headers, raw = _call(server, {"messages": [], "stream": True})
    assert (status, headers["content-type"]) == (200, "text/event-stream")
    events = _events(raw)
    assert [name for name, _ in events][:3] == ["message_start", "content_block_start", "ping"]
    assert [name for name, _ in events][-2:] == ["message_delta", "message_stop"]
    assert all(data["type"] == name for name, data in events)
    start = events[0][1]["message"]
    assert (start["model"], start["content"], start["stop_reason"]) == ("claude-fake", [], None)
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    assert "".join(d.get("thinking", "") for d in deltas) == "Paris first."
    assert "".join(d.get("text", "") for d in deltas) == "Looking."
    assert "".join(d.get("partial_json", "") for d in deltas) == '{"city":"Paris"}'
    assert len([d for d in deltas if d["type"] == "input_json_delta"]) == 3
    assert [d["signature"] for d in deltas if d["type"] == "signature_delta"] == [
        fake_anthropic.signature("Paris first.")
    ]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    assert events[-2][1]["usage"] == {"output_tokens": 7}


@pytest.mark.parametrize(
    ("sent", "stop_reason"),
    [("stop", "end_turn"), ("length", "max_tokens"), ("refusal", "refusal")],
)
def test_finish_reasons(server: FakeAnthropicServer, sent: str, stop_reason: str) -> None:
    server.add(FakeReply.text("x", finish_reason=sent))
    _, _, raw = _call(server, {"messages": []})
    assert json.loads(raw)["stop_reason"] == stop_reason


def test_a_changed_thinking_block_is_refused(server: FakeAnthropicServer) -> None:
    server.add(FakeReply.text("fine"))
    block = {"type": "thinking", "thinking": "a", "signature": fake_anthropic.signature("a")}
    turns = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{**block, "thinking": "b"}]},
    ]
    status, _, raw = _call(server, {"messages": turns})
    assert status == 400
    assert json.loads(raw)["error"] == {
        "type": "invalid_request_error",
        "message": "messages.1: invalid signature in thinking block",
    }
    turns[1]["content"] = [block]  # unchanged, or signed by the real API: accepted
    assert _call(server, {"messages": turns})[0] == 200


def test_models_and_unknown_routes(server: FakeAnthropicServer) -> None:
    status, _, raw = _call(server, None, "/v1/models", "GET")
    assert status == 200
    assert json.loads(raw)["data"] == [
        {"type": "model", "id": "claude-fake", "display_name": "claude-fake"}
    ]
    for method, path in [("GET", "/v1/nothing"), ("POST", "/v1/chat/completions")]:
        status, _, raw = _call(server, {}, path, method)
        assert status == 404
        assert json.loads(raw)["error"]["type"] == "not_found_error"


def test_script_problems_show_up(server: FakeAnthropicServer) -> None:
    server.add(FakeReply.tool_call("ls", '{"path": '))  # not JSON: cannot become an input
    status, _, raw = _call(server, {"messages": []})
    assert status == 500
    assert "FakeAnthropicServer: the script raised" in json.loads(raw)["error"]["message"]
    status, _, raw = _call(server, {"messages": []})
    assert status == 500
    assert "FakeAnthropicServer: the script has no reply left" in raw.decode()


def test_script_function_sees_the_body() -> None:
    def answer(body: Any) -> FakeReply:
        return FakeReply.text(f"{len(body['messages'])} messages")

    with FakeAnthropicServer(answer) as server:
        _, _, raw = _call(server, {"messages": [{"role": "user", "content": "a"}]})
    assert json.loads(raw)["content"] == [{"type": "text", "text": "1 messages"}]


def test_error_answers(server: FakeAnthropicServer) -> None:
    server.add(
        fake_anthropic.error(
            429, "slow down", type="rate_limit_error", headers={"retry-after": "3"}
        )
    )
    status, headers, raw = _call(server, {"messages": []})
    assert (status, headers["retry-after"], headers["request-id"]) == (429, "3", "req_fake")
    assert json.loads(raw) == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow down"},
        "request_id": "req_fake",
    }


def test_error_event_breaks_off_a_stream(server: FakeAnthropicServer) -> None:
    server.add(fake_anthropic.error_event(text="Hel"))
    status, _, raw = _call(server, {"messages": [], "stream": True})
    events = _events(raw)
    assert status == 200
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "error",
    ]
    assert events[-1][1]["error"] == {"type": "overloaded_error", "message": "Overloaded"}


def test_recorded_exchanges_are_served_byte_for_byte(server: FakeAnthropicServer) -> None:
    exchange = json.loads((PROVIDERS / "anthropic-stream-tool-use.json").read_text())
    raw_sse = exchange["response"]["sse_raw"].encode()
    cut = [raw_sse[:10], raw_sse[10:11], raw_sse[11:]]
    server.add(
        fake_anthropic.recorded(exchange, chunk_size=7),
        fake_anthropic.recorded(exchange, pieces=cut),
    )
    for _ in range(2):
        status, headers, raw = _call(server, {"messages": [], "stream": True})
        assert (status, headers["content-type"], raw) == (200, "text/event-stream", raw_sse)
    with pytest.raises(ValueError, match="do not add up"):
        fake_anthropic.recorded(exchange, pieces=cut[:2])
    error = json.loads((PROVIDERS / "anthropic-error-401-authentication.json").read_text())
    server.add(fake_anthropic.recorded(error))
    status, headers, raw = _call(server, {"messages": []})
    assert (status, headers["x-should-retry"]) == (401, "false")
    assert json.loads(raw) == error["response"]["body"]
