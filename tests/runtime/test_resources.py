"""`AgentResources`: one concurrency limit per profile across agents; closing reaches the HTTP
clients through every wrapper."""

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.agent import AgentSpec
from harness.core import Message
from harness.gateway import Model, ModelProfile, ModelRequest
from harness.gateway.providers.openai import OpenAIModel
from harness.runtime import Settings
from harness.runtime.resources import AgentResources
from harness.testing import FakeOpenAIServer, FakeReply


class InFlight:
    """A server script, shareable by several servers, that counts requests answered at once."""

    def __init__(self, *, overlap_expected: bool = False) -> None:
        # Expecting overlap, a request waits (up to 5 s) for a second one to arrive, so
        # that a busy machine cannot hide it; otherwise 50 ms give one the chance to.
        self._wait_s = 5.0 if overlap_expected else 0.05
        self._overlap = threading.Event()
        self.now = 0
        self.most = 0
        self.seen = 0
        self._lock = threading.Lock()

    def __call__(self, body: Any) -> FakeReply:
        with self._lock:
            self.now += 1
            self.seen += 1
            self.most = max(self.most, self.now)
            if self.now > 1:
                self._overlap.set()
        self._overlap.wait(self._wait_s)
        with self._lock:
            self.now -= 1
        return FakeReply.text("ok")


def providers(model: object) -> Iterator[OpenAIModel]:
    """The provider models at the bottom of a stack, through wrappers and fallbacks."""
    if isinstance(model, OpenAIModel):
        yield model
        return
    for member in getattr(model, "models", ()):
        yield from providers(member)
    inner = getattr(model, "inner", None)
    if inner is not None:
        yield from providers(inner)


REQUEST = ModelRequest(messages=(Message.user("x"),))


async def test_agents_of_one_profile_share_its_concurrency_limit(tmp_path: Path) -> None:
    counter = InFlight()
    with FakeOpenAIServer(counter) as one, FakeOpenAIServer(counter) as two:
        profile = ModelProfile(name="shared", model="fake", base_url=one.base_url, concurrency=1)
        resources = AgentResources(Settings(home=tmp_path, profiles={"shared": profile}))
        first = AgentSpec(name="a", model="shared")
        second = AgentSpec(name="b", model="shared", base_url=two.base_url)
        models = [resources.model(first), resources.model(second)]
        assert models[0] is not models[1]  # two clients, one limit
        await asyncio.gather(*(m.request(REQUEST) for m in models for _ in range(3)))
        await resources.aclose()
    assert counter.seen == 6
    assert counter.most == 1
    assert (len(one.requests), len(two.requests)) == (3, 3)


async def test_without_a_limit_the_agents_requests_overlap(tmp_path: Path) -> None:
    counter = InFlight(overlap_expected=True)
    with FakeOpenAIServer(counter) as server:
        profile = ModelProfile(name="free", model="fake", base_url=server.base_url)
        resources = AgentResources(Settings(home=tmp_path, profiles={"free": profile}))
        model = resources.model(AgentSpec(model="free"))
        await asyncio.gather(*(model.request(REQUEST) for _ in range(4)))
        await resources.aclose()
    assert counter.most > 1


async def test_closing_the_resources_closes_every_providers_client(tmp_path: Path) -> None:
    with FakeOpenAIServer([FakeReply.text("ok")]) as server:
        profiles = {
            "main": ModelProfile(
                name="main",
                model="fake",
                base_url=server.base_url,
                concurrency=2,
                max_retries=2,
                tool_calls="text:hermes",
                fallbacks=("spare",),
            ),
            "spare": ModelProfile(name="spare", model="fake", base_url=server.base_url),
        }
        resources = AgentResources(Settings(home=tmp_path, profiles=profiles))
        model: Model = resources.model(AgentSpec(model="main"))
        found = list(providers(model))
        assert len(found) == 2
        assert (await model.request(REQUEST)).message.content == "ok"
        await resources.aclose()
        for provider in found:
            with pytest.raises(RuntimeError, match="client has been closed"):
                await provider.request(REQUEST)
        assert len(server.requests) == 1
