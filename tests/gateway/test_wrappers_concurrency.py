"""ConcurrencyLimitedModel: never more requests in flight than its limit.

The inner models count how many calls are inside them at once; each call yields to the
event loop a few times, so that every request the limiter lets through is in flight
together. No test depends on time.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from harness.core.messages import Message
from harness.errors import ConfigError
from harness.gateway import ConcurrencyLimitedModel, RetryingModel
from harness.gateway.model import ModelRequest, StreamEvent
from harness.gateway.providers.openai import OpenAIModel
from harness.gateway.scripted import FunctionModel
from harness.testing import FakeOpenAIServer, FakeReply, faults


class InFlight:
    """Counts the calls inside the models it serves, and the most at once."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0

    async def answer(self, request: ModelRequest) -> str:
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            for _ in range(5):
                await asyncio.sleep(0)
        finally:
            self.now -= 1
        return f"answer to {request.messages[-1].content}"


def ask(n: int) -> ModelRequest:
    return ModelRequest(messages=(Message.user(str(n)),))


async def test_fifty_requests_never_exceed_the_limit() -> None:
    counter = InFlight()
    model = ConcurrencyLimitedModel(FunctionModel(counter.answer), 5)
    responses = await asyncio.gather(*(model.request(ask(n)) for n in range(50)))
    assert [r.message.content for r in responses] == [f"answer to {n}" for n in range(50)]
    assert counter.most == 5
    assert counter.now == 0


async def test_fifty_streams_never_exceed_the_limit() -> None:
    counter = InFlight()
    model = ConcurrencyLimitedModel(FunctionModel(counter.answer), 3)

    async def consume(n: int) -> int:
        return len([event async for event in model.stream(ask(n))])

    counts = await asyncio.gather(*(consume(n) for n in range(50)))
    assert all(count > 1 for count in counts)
    assert counter.most == 3


async def test_without_the_wrapper_the_same_load_goes_over() -> None:
    counter = InFlight()
    await asyncio.gather(*(FunctionModel(counter.answer).request(ask(n)) for n in range(50)))
    assert counter.most == 50


async def test_a_shared_limiter_limits_both_wrappers() -> None:
    counter = InFlight()
    first = ConcurrencyLimitedModel(FunctionModel(counter.answer, name="a"), 4)
    second = ConcurrencyLimitedModel(FunctionModel(counter.answer, name="b"), first.limiter)
    third = ConcurrencyLimitedModel(FunctionModel(counter.answer, name="c"), asyncio.Semaphore(2))
    models = [first, second] * 25
    await asyncio.gather(*(m.request(ask(n)) for n, m in enumerate(models)))
    assert counter.most == 4
    counter.most = 0
    await asyncio.gather(*(m.request(ask(n)) for n, m in enumerate([*models, third, third, third])))
    assert counter.most == 6


async def test_a_stream_holds_its_slot_until_closed() -> None:
    model = ConcurrencyLimitedModel(FunctionModel(lambda request: "a long enough answer"), 1)
    inner = model.inner
    assert isinstance(inner, FunctionModel)
    stream = model.stream(ask(1))
    assert isinstance(stream, AsyncGenerator)
    first: StreamEvent = await anext(stream)
    assert first is not None
    waiting = asyncio.create_task(model.request(ask(2)))
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(inner.requests) == 1
    assert not waiting.done()
    await stream.aclose()
    response = await waiting
    assert response.message.content == "a long enough answer"
    assert len(inner.requests) == 2


async def test_a_failed_request_gives_its_slot_back() -> None:
    def fail(request: ModelRequest) -> str:
        raise RuntimeError("inner failure")

    model = ConcurrencyLimitedModel(FunctionModel(fail), 1)
    for _ in range(3):
        with pytest.raises(RuntimeError):
            await model.request(ask(0))
    limiter = model.limiter
    assert isinstance(limiter, asyncio.Semaphore)
    assert not limiter.locked()


async def test_under_retries_over_http() -> None:
    seen: set[str] = set()

    def first_attempt_fails(body: Any) -> FakeReply:
        asked = body["messages"][-1]["content"]
        if asked in seen:
            return FakeReply.text(f"answer to {asked}")
        seen.add(asked)
        return faults.status(503)

    async def no_wait(delay: float) -> None:
        await asyncio.sleep(0)

    with FakeOpenAIServer(first_attempt_fails) as server:
        async with OpenAIModel("m", base_url=server.base_url) as client:
            model = RetryingModel(ConcurrencyLimitedModel(client, 2), sleep=no_wait)
            responses = await asyncio.gather(*(model.request(ask(n)) for n in range(10)))
    assert [r.message.content for r in responses] == [f"answer to {n}" for n in range(10)]
    ids = Counter(r.headers["x-request-id"] for r in server.requests)
    assert sorted(ids.values()) == [2] * 10


def test_name_and_bad_limits() -> None:
    inner = FunctionModel(lambda request: "x", name="inner")
    assert ConcurrencyLimitedModel(inner, 1).name == "inner"
    for limit in (0, -3):
        with pytest.raises(ConfigError, match="at least 1"):
            ConcurrencyLimitedModel(inner, limit)
