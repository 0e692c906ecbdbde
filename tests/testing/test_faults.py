"""The fault replies of `harness.testing.faults`, seen by a raw socket and by OpenAIModel.

One attempt each, no retries: what a client meets when the server misbehaves this way.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator, Iterator

import pytest

from harness.core.messages import Message
from harness.errors import (
    ModelAPIError,
    ModelConnectionError,
    ModelOverloadedError,
    ModelRateLimitError,
    ModelResponseError,
    ModelServerError,
    ModelStreamError,
    ModelTimeoutError,
)
from harness.gateway.model import ModelRequest, ResponseDone, StreamEvent, TextDelta
from harness.gateway.providers.openai import OpenAIModel
from harness.testing import FakeOpenAIServer, FakeReply, faults


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def client(server: FakeOpenAIServer) -> AsyncIterator[OpenAIModel]:
    async with OpenAIModel("m", base_url=server.base_url, timeout_s=0.2) as model:
        yield model


def hello() -> ModelRequest:
    return ModelRequest(messages=(Message.user("hello"),))


async def stream_into(model: OpenAIModel, events: list[StreamEvent]) -> None:
    async for event in model.stream(hello()):
        events.append(event)


def raw_exchange(server: FakeOpenAIServer, stream: bool) -> tuple[bytes, BaseException | None]:
    """POST a chat request over a bare socket; what came back, and how reading ended."""
    port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
    body = json.dumps({"model": "m", "messages": [], "stream": stream}).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode()
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.sendall(head + body)
        try:
            while chunk := connection.recv(65536):
                received += chunk
        except OSError as exc:
            return received, exc
    return received, None


# --- statuses ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "error", "status", "retry_after"),
    [
        (faults.rate_limited(), ModelRateLimitError, 429, None),
        (faults.rate_limited(retry_after=3), ModelRateLimitError, 429, 3.0),
        (faults.status(429, retry_after_ms=250), ModelRateLimitError, 429, 0.25),
        (faults.status(500), ModelServerError, 500, None),
        (faults.status(503, retry_after=1.5), ModelServerError, 503, 1.5),
        (faults.overloaded(), ModelOverloadedError, 529, None),
    ],
    ids=["429", "429-retry-after", "429-retry-after-ms", "500", "503-retry-after", "529"],
)
async def test_status_faults(
    server: FakeOpenAIServer,
    client: OpenAIModel,
    fault: FakeReply,
    error: type[ModelAPIError],
    status: int,
    retry_after: float | None,
) -> None:
    server.add(fault)
    with pytest.raises(error) as caught:
        await client.request(hello())
    assert (caught.value.status, caught.value.retry_after) == (status, retry_after)
    assert caught.value.retryable


def test_status_headers_and_body(server: FakeOpenAIServer) -> None:
    when = "Wed, 21 Oct 2065 07:28:00 GMT"
    server.add(faults.status(503, "maintenance", retry_after=when, type="unavailable"))
    received, _ = raw_exchange(server, stream=False)
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503")
    assert f"retry-after: {when}".encode() in head.split(b"\r\n")
    assert json.loads(body) == {
        "error": {"message": "maintenance", "type": "unavailable", "code": None}
    }


# --- broken connections --------------------------------------------------------------------


def test_reset_is_a_tcp_reset_after_the_first_delta(server: FakeOpenAIServer) -> None:
    server.add(faults.reset_mid_stream(text_before="Hel"))
    received, ended = raw_exchange(server, stream=True)
    assert isinstance(ended, ConnectionResetError)
    assert b'"content": "Hel"' in received
    assert b"lo, world" not in received
    assert b"[DONE]" not in received


async def test_reset_mid_stream_through_openai_model(
    server: FakeOpenAIServer, client: OpenAIModel
) -> None:
    server.add(faults.reset_mid_stream(text_before="Hel"), faults.reset_mid_stream(""))
    for expected in ([TextDelta(text="Hel")], []):
        events: list[StreamEvent] = []
        with pytest.raises(ModelConnectionError) as caught:
            await stream_into(client, events)
        assert type(caught.value) is ModelConnectionError
        assert events == expected


async def test_reset_after_applies_to_rendered_replies(
    server: FakeOpenAIServer, client: OpenAIModel
) -> None:
    server.add(FakeReply(content="a whole answer", reset_after=30))
    with pytest.raises(ModelConnectionError):
        await client.request(hello())
    server.add(FakeReply(content="a whole answer"))
    assert (await client.request(hello())).message.content == "a whole answer"


def test_reset_after_beyond_the_body_sends_it_all_then_resets(server: FakeOpenAIServer) -> None:
    server.add(FakeReply.raw(200, {"content-type": "text/plain"}, b"complete", reset_after=99))
    received, ended = raw_exchange(server, stream=False)
    assert received.endswith(b"\r\n\r\ncomplete")
    assert isinstance(ended, ConnectionResetError)


@pytest.mark.parametrize("streaming", [False, True], ids=["request", "stream"])
async def test_slow_first_byte_is_a_timeout(
    server: FakeOpenAIServer, client: OpenAIModel, streaming: bool
) -> None:
    server.add(faults.slow_first_byte(30))
    with pytest.raises(ModelTimeoutError):
        await (stream_into(client, []) if streaming else client.request(hello()))


async def test_slow_first_byte_keeps_its_reply(server: FakeOpenAIServer) -> None:
    server.add(faults.slow_first_byte(0.01, then=FakeReply.text("late but fine")))
    async with OpenAIModel("m", base_url=server.base_url) as patient:
        assert (await patient.request(hello())).message.content == "late but fine"


# --- unreadable answers and error events ---------------------------------------------------


async def test_malformed_json(server: FakeOpenAIServer, client: OpenAIModel) -> None:
    server.add(faults.malformed_json())
    with pytest.raises(ModelResponseError, match="could not understand"):
        await client.request(hello())


@pytest.mark.parametrize(
    ("code", "text_before", "retryable"),
    [(503, "", True), (None, "Hel", True), (400, "", False), ("rate_limit", "", True)],
)
async def test_error_event_inside_a_200_stream(
    server: FakeOpenAIServer,
    client: OpenAIModel,
    code: int | str | None,
    text_before: str,
    retryable: bool,
) -> None:
    server.add(faults.error_event("upstream said no", code=code, text_before=text_before))
    events: list[StreamEvent] = []
    with pytest.raises(ModelStreamError) as caught:
        await stream_into(client, events)
    assert (caught.value.status, caught.value.retryable) == (200, retryable)
    assert "upstream said no" in str(caught.value)
    assert events == ([TextDelta(text=text_before)] if text_before else [])


# --- scripts -----------------------------------------------------------------------------


async def test_fail_then_serves_the_faults_then_the_answer(
    server: FakeOpenAIServer, client: OpenAIModel
) -> None:
    server.add(*faults.fail_then([faults.status(500), faults.rate_limited()], times=2))
    kinds = []
    for _ in range(4):
        with pytest.raises(ModelAPIError) as caught:
            await client.request(hello())
        kinds.append(caught.value.status)
    assert kinds == [500, 429, 500, 429]
    events: list[StreamEvent] = []
    await stream_into(client, events)
    assert isinstance(events[-1], ResponseDone)
    assert events[-1].response.message.content == "ok"


def test_fail_then_with_a_given_answer() -> None:
    then = FakeReply.text("finally")
    script = faults.fail_then(faults.overloaded(), times=3, then=then)
    assert [reply.status for reply in script] == [529, 529, 529, 200]
    assert script[-1] is then


async def test_a_held_stream_sends_its_first_chunks_then_waits(server: FakeOpenAIServer) -> None:
    rest = threading.Event()
    server.add(FakeReply(content="onetwothr", hold=rest, hold_after=2))  # role, then "one"
    events: list[StreamEvent] = []
    async with OpenAIModel("m", base_url=server.base_url, timeout_s=60) as model:
        streaming = asyncio.create_task(stream_into(model, events))
        async with asyncio.timeout(60):  # only keeps a broken test from hanging
            while not any(isinstance(e, TextDelta) for e in events):
                await asyncio.sleep(0.01)
        texts = [e.text for e in events if isinstance(e, TextDelta)]
        assert texts == ["one"]
        assert not streaming.done()
        rest.set()
        await streaming
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert texts == ["one", "two", "thr"]
    assert isinstance(events[-1], ResponseDone)
