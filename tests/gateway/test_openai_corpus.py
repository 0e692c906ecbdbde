"""OpenAIModel against every recorded OpenAI-compatible exchange, over real HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import (
    ContextOverflowError,
    ModelAPIError,
    ModelAuthenticationError,
    ModelBadRequestError,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelServerError,
    ModelStreamError,
)
from harness.gateway.model import ReasoningDelta, StreamEvent
from harness.gateway.providers.openai import OpenAIModel
from harness.testing.fake_openai import FakeOpenAIServer

from .conftest import (
    Exchange,
    a_request,
    assert_deltas_add_up,
    assert_matches,
    body_bytes,
    collect,
    final_response,
    is_stream_request,
    load_openai_exchanges,
    params,
    served_reply,
)

EXCHANGES = load_openai_exchanges()
CHATS = [e for e in EXCHANGES if e["kind"] == "chat"]
STREAMS = [
    e
    for e in EXCHANGES
    if e["kind"] == "chat_stream" and not e["expected_normalized"].get("stream_errors")
]
ERROR_STREAMS = [
    e
    for e in EXCHANGES
    if e["kind"] == "chat_stream" and e["expected_normalized"].get("stream_errors")
]
ERRORS = [e for e in EXCHANGES if e["kind"] == "error"]

# file stem -> (error class, retryable, retry_after); written out rather than derived
ERROR_OUTCOMES: dict[str, tuple[type[ModelAPIError], bool, float | None]] = {
    "groq-error-400-tool-use-failed": (ModelBadRequestError, False, None),
    "huggingface-error-500-retry-after": (ModelServerError, True, 1.0),
    "huggingface-error-502-html-body": (ModelServerError, True, None),
    "llamacpp-error-500-context-exceeded": (ContextOverflowError, False, None),
    "openai-error-400-unsupported-value": (ModelBadRequestError, False, None),
    "openai-error-401-invalid-api-key": (ModelAuthenticationError, False, None),
    "openai-error-401-on-stream-request": (ModelAuthenticationError, False, None),
    "openai-error-404-model-not-found": (ModelNotFoundError, False, None),
    "openai-error-429-tpm-message-observed": (ModelRateLimitError, True, 0.174),
    "openrouter-error-429-no-retry-after": (ModelRateLimitError, True, None),
}


def test_every_openai_exchange_is_tested() -> None:
    assert len(EXCHANGES) == len(CHATS) + len(STREAMS) + len(ERROR_STREAMS) + len(ERRORS)
    assert {e["id"] for e in ERRORS} == set(ERROR_OUTCOMES)
    assert len(CHATS) >= 20
    assert len(STREAMS) >= 10
    assert len(ERROR_STREAMS) == 2


@pytest.mark.parametrize("exchange", params(CHATS))
async def test_chat(exchange: Exchange, server: FakeOpenAIServer, model: OpenAIModel) -> None:
    server.add(served_reply(exchange))
    response = await model.request(a_request(request_id="req_corpus"))
    assert_matches(response, exchange)
    assert response.request_id == "req_corpus"


@pytest.mark.parametrize("pieces", [None, 1, 7], ids=["whole", "1-byte", "7-byte"])
@pytest.mark.parametrize("exchange", params(STREAMS))
async def test_stream(
    exchange: Exchange, pieces: int | None, server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.add(served_reply(exchange, pieces))
    events = await collect(model, a_request())
    response = final_response(events)
    assert_matches(response, exchange)
    assert_deltas_add_up(events, response)


@pytest.mark.parametrize("pieces", [None, 1, 7], ids=["whole", "1-byte", "7-byte"])
@pytest.mark.parametrize("exchange", params(ERROR_STREAMS))
async def test_error_inside_a_stream(
    exchange: Exchange, pieces: int | None, server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.add(served_reply(exchange, pieces))
    events: list[StreamEvent] = []
    with pytest.raises(ModelStreamError) as caught:
        await collect(model, a_request(request_id="req_stream"), into=events)
    error = caught.value
    recorded = exchange["expected_normalized"]["stream_errors"][0]
    assert (error.status, error.retryable, error.request_id) == (200, False, "req_stream")
    assert recorded["message"] in str(error)
    # the deltas that came before the error were delivered
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert reasoning == exchange["expected_normalized"]["choices"][0]["reasoning"]


@pytest.mark.parametrize("exchange", params(ERRORS))
async def test_error(exchange: Exchange, server: FakeOpenAIServer, model: OpenAIModel) -> None:
    server.add(served_reply(exchange))
    request = a_request(request_id="req_error")
    call = collect(model, request) if is_stream_request(exchange) else model.request(request)
    with pytest.raises(ModelAPIError) as caught:
        await call
    error = caught.value
    cls, retryable, retry_after = ERROR_OUTCOMES[exchange["id"]]
    assert type(error) is cls
    assert (error.status, error.retryable) == (exchange["response"]["status"], retryable)
    assert error.retry_after == (pytest.approx(retry_after) if retry_after else None)
    assert error.request_id == "req_error"
    _assert_error_message(error, exchange)


def _assert_error_message(error: ModelAPIError, exchange: Exchange) -> None:
    said = exchange["expected_normalized"]["error"].get("message")
    message = str(error)
    assert message.startswith(f"HTTP {error.status}: ")
    if said:  # the provider's own words are kept
        assert said in message
    else:  # a non-JSON body: a short excerpt, not the whole page
        assert len(message) < 600
        assert error.body is not None
        assert len(error.body) <= 2000
    if exchange["id"] == "huggingface-error-502-html-body":
        assert "<!DOCTYPE html>" in message


def _cuts(exchange: Exchange) -> st.SearchStrategy[list[bytes]]:
    raw = body_bytes(exchange)
    points = st.lists(st.integers(1, len(raw) - 1), max_size=40, unique=True)
    return points.map(lambda cut: _pieces(raw, sorted(cut)))


def _pieces(raw: bytes, cuts: list[int]) -> list[bytes]:
    return [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]


def test_any_split_of_a_stream_gives_the_same_message() -> None:
    with FakeOpenAIServer() as server:

        @settings(max_examples=60, deadline=None)
        @given(data=st.data())
        def check(data: Any) -> None:
            exchange = data.draw(st.sampled_from(STREAMS), label="exchange")
            pieces = data.draw(_cuts(exchange), label="pieces")
            server.add(served_reply(exchange, pieces))
            events = asyncio.run(_stream_once(server.base_url))
            assert_matches(final_response(events), exchange)

        check()


async def _stream_once(base_url: str) -> list[StreamEvent]:
    async with OpenAIModel("test-model", base_url=base_url) as model:
        return await collect(model, a_request())
