"""Helpers for the gateway tests: the recorded provider exchanges of tests/corpus/providers.

Each exchange is served byte-for-byte by `FakeOpenAIServer` (see tests/corpus/README.md §1):
the recorded status and headers, and `json.dumps(body)`, `body_text` or `sse_raw`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.core.messages import Message
from harness.core.usage import Usage
from harness.gateway.model import (
    Model,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from harness.gateway.providers.openai import OpenAIModel
from harness.testing.fake_openai import FakeOpenAIServer, FakeReply

PROVIDERS = Path(__file__).resolve().parents[1] / "corpus" / "providers"

Exchange = dict[str, Any]

_RAW_FINISH = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


def load_exchanges(api: str) -> list[Exchange]:
    """Every exchange of the corpus with `api` (e.g. `anthropic.messages`), by file name."""
    exchanges = []
    for path in sorted(PROVIDERS.glob("*.json")):
        exchange = json.loads(path.read_text(encoding="utf-8"))
        if exchange["api"] == api:
            exchanges.append(exchange)
    return exchanges


def load_openai_exchanges() -> list[Exchange]:
    """Every OpenAI chat-completions exchange of the corpus, sorted by file name."""
    return load_exchanges("openai.chat.completions")


def params(exchanges: Sequence[Exchange]) -> list[Any]:
    """`pytest.param`s with the file stem as id."""
    return [pytest.param(exchange, id=exchange["id"]) for exchange in exchanges]


def is_stream_request(exchange: Exchange) -> bool:
    """Whether the recorded request asked for a stream."""
    body = exchange["request"].get("body") or {}
    return exchange["kind"] == "chat_stream" or body.get("stream") is True


def body_bytes(exchange: Exchange) -> bytes:
    """The response body as it was on the wire."""
    response = exchange["response"]
    if "sse_raw" in response:
        return response["sse_raw"].encode()
    if "body_text" in response:
        return response["body_text"].encode()
    body = response["body"]
    if body is None and "observed_error_message" in response:
        # Only the message was quoted; wrap it in the shape the body_note documents.
        body = {
            "error": {
                "message": response["observed_error_message"],
                "type": "tokens",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        }
    return json.dumps(body).encode()


def served_reply(exchange: Exchange, pieces: int | Sequence[bytes] | None = None) -> FakeReply:
    """The recorded answer as a raw reply: whole, in `pieces`-byte chunks, or pre-cut pieces."""
    response = exchange["response"]
    headers = dict(response["headers"])
    if "sse_raw" in response:
        headers["content-type"] = "text/event-stream"
    headers.setdefault("content-type", "application/json")
    body = body_bytes(exchange)
    if isinstance(pieces, int) or pieces is None:
        return FakeReply.raw(response["status"], headers, body, chunk_size=pieces)
    return FakeReply.raw(response["status"], headers, pieces)


def a_request(*, request_id: str | None = None) -> ModelRequest:
    """A minimal request: the served answer does not depend on it."""
    return ModelRequest(messages=(Message.user("hello"),), request_id=request_id)


async def collect(
    model: Model, request: ModelRequest, into: list[StreamEvent] | None = None
) -> list[StreamEvent]:
    """All events of `model.stream(request)`, appended to `into` as they arrive."""
    events = [] if into is None else into
    stream: AsyncIterator[StreamEvent] = model.stream(request)
    async for event in stream:
        events.append(event)
    return events


def final_response(events: Sequence[StreamEvent]) -> ModelResponse:
    """The response of the one `ResponseDone`, which must come last."""
    done = [event for event in events if isinstance(event, ResponseDone)]
    assert len(done) == 1
    assert events[-1] is done[0]
    return done[0].response


def expected_finish(choice: dict[str, Any]) -> str:
    """Our finish reason for a recorded choice: the mapping table plus two rules."""
    raw = choice["finish_reason"]
    if choice["refusal"]:
        return "refusal"
    reason = _RAW_FINISH.get(raw or "", "other")
    if choice["tool_calls"] and reason in ("stop", "other"):
        return "tool_calls"
    return reason


def assert_matches(response: ModelResponse, exchange: Exchange) -> None:
    """The normalised response agrees with the corpus's `expected_normalized`."""
    expected = exchange["expected_normalized"]
    choice = expected["choices"][0]
    message = response.message
    assert message.role == "assistant"
    assert message.content == (choice["content"] or None)
    assert message.reasoning == (choice["reasoning"] or None)
    assert response.refusal == (choice["refusal"] or None)
    assert response.raw_finish_reason == choice["finish_reason"]
    assert response.finish_reason == expected_finish(choice)
    assert response.model == expected["model"]
    assert_tool_calls(message, choice["tool_calls"])
    usage = expected["usage"] or {}
    assert response.usage == Usage(
        input_tokens=usage.get("input_tokens", 0),
        output_tokens=usage.get("output_tokens", 0),
        cached_tokens=usage.get("cached_input_tokens", 0),
        reasoning_tokens=usage.get("reasoning_tokens", 0),
        requests=1,
    )


def assert_tool_calls(message: Message, expected: list[dict[str, Any]]) -> None:
    """Same calls, in order: names, arguments exactly as sent, ids as sent or synthesised."""
    assert [call.name for call in message.tool_calls] == [call["name"] for call in expected]
    for got, want in zip(message.tool_calls, expected, strict=True):
        assert got.arguments == want["arguments"]
        if want["arguments_json_valid"]:
            assert json.loads(got.arguments) == json.loads(want["arguments"])
        assert got.id == want["id"] if want["id"] else got.id.startswith("call_")
    assert len({call.id for call in message.tool_calls}) == len(message.tool_calls)


def assert_deltas_add_up(events: Sequence[StreamEvent], response: ModelResponse) -> None:
    """The deltas of a stream, joined, are the final message."""
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert text == (response.message.content or "")
    assert reasoning == (response.message.reasoning or "")
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    for index, call in enumerate(response.message.tool_calls):
        fragments = [e.arguments for e in calls if e.index == _index_of(calls, index)]
        assert "".join(fragments) == call.arguments


def _index_of(calls: Sequence[ToolCallDelta], position: int) -> int:
    return sorted({call.index for call in calls})[position]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    """A started fake server with an empty script."""
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def model(server: FakeOpenAIServer) -> AsyncIterator[OpenAIModel]:
    """An `OpenAIModel` pointed at `server`, closed after the test."""
    async with OpenAIModel("test-model", base_url=server.base_url) as opened:
        yield opened
