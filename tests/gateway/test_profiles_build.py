"""`build_model`: a profile becomes a stack of models; each layer proven over real HTTP."""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any

import pytest

from harness.core.events import ModelFallback
from harness.core.messages import Message, ToolDefinition
from harness.errors import ConfigError, ModelServerError, ProfileError
from harness.gateway.model import GatewayNotice, ModelRequest, ModelSettings, ResponseDone
from harness.gateway.pricing import Prices
from harness.gateway.profiles import ModelProfile, build_model, resolve_model
from harness.gateway.providers.anthropic import AnthropicModel
from harness.gateway.wrappers import Limiter
from harness.testing import FakeOpenAIServer, FakeReply, faults
from harness.testing.fake_anthropic import FakeAnthropicServer

ADD = ToolDefinition(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
HERMES_CALL = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'


def on(server: FakeOpenAIServer, name: str = "p", **changes: Any) -> ModelProfile:
    return ModelProfile(name=name, model="fake-model", base_url=server.base_url, **changes)


def with_tools() -> ModelRequest:
    return ModelRequest(messages=(Message.user("add 2 and 3"),), tools=(ADD,))


# ── tool calls ────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "changes",
    [{"tool_calls": "text:hermes"}, {"tool_calls": "auto", "native_tools": False}],
    ids=["text-hermes", "auto-without-native-tools"],
)
async def test_tool_calls_written_as_text_are_parsed(changes: dict[str, Any]) -> None:
    with FakeOpenAIServer([FakeReply.text(HERMES_CALL)]) as server:
        model = build_model(on(server, **changes))
        response = await model.request(with_tools())
        body = server.requests[0].body
    (call,) = response.message.tool_calls
    assert (call.name, call.arguments) == ("add", '{"a": 2, "b": 3}')
    assert "tools" not in body  # described in the prompt instead
    assert "add" in body["messages"][0]["content"]


async def test_native_tool_calls_are_sent_as_tools() -> None:
    with FakeOpenAIServer([FakeReply.tool_call("add", {"a": 2, "b": 3})]) as server:
        response = await build_model(on(server)).request(with_tools())
        body = server.requests[0].body
    assert [tool["function"]["name"] for tool in body["tools"]] == ["add"]
    assert response.message.tool_calls[0].name == "add"


async def test_the_profile_settings_reach_the_wire_and_the_agent_settings_win() -> None:
    with FakeOpenAIServer([FakeReply.text("a"), FakeReply.text("b")]) as server:
        model = build_model(
            on(server, temperature=0.3, max_output_tokens=99, extra_body={"top_k": 7})
        )
        await model.request(ModelRequest(messages=(Message.user("x"),)))
        own = ModelSettings(temperature=1.0)
        await model.request(ModelRequest(messages=(Message.user("x"),), settings=own))
        first, second = (r.body for r in server.requests)
    assert (first["temperature"], first["max_tokens"], first["top_k"]) == (0.3, 99, 7)
    assert (second["temperature"], second["max_tokens"]) == (1.0, 99)


# ── retries and fallbacks ─────────────────────────────────────────────────────


async def test_retries_follow_the_profile() -> None:
    script = faults.fail_then(faults.status(503, retry_after=0), times=2)
    with FakeOpenAIServer(script) as server:
        response = await build_model(on(server, max_retries=2)).request(with_tools())
    assert response.message.content == "ok"

    with FakeOpenAIServer(script) as server:
        with pytest.raises(ModelServerError):
            await build_model(on(server, max_retries=0)).request(with_tools())
        assert len(server.requests) == 1


async def test_a_failing_profile_falls_back_with_the_fallback_prices() -> None:
    notices: list[GatewayNotice] = []
    failing = [faults.status(500)]
    answer = [FakeReply.text("from the fallback", input_tokens=1000, output_tokens=100)]
    with FakeOpenAIServer(failing) as first, FakeOpenAIServer(answer) as second:
        profiles = {
            "first": on(first, "first", max_retries=0, fallbacks=("second",)),
            "second": on(second, "second", prices=Prices(input=1.0, output=10.0)),
        }
        model = resolve_model("first", profiles)
        request = ModelRequest(
            messages=(Message.user("hi"),),
            observer=notices.append,
        )
        events = [event async for event in model.stream(request)]
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.message.content == "from the fallback"
    assert done.response.usage.cost_usd == pytest.approx((1000 * 1.0 + 100 * 10.0) / 1e6)
    assert [type(notice) for notice in notices] == [ModelFallback]


async def test_fallbacks_are_checked_when_the_model_is_built() -> None:
    profiles = {
        "a": ModelProfile(name="a", fallbacks=("b",)),
        "b": ModelProfile(name="b", fallbacks=("a",)),
    }
    with pytest.raises(ProfileError, match=r"cycle \(a → b → a\)"):
        resolve_model("a", profiles)
    with pytest.raises(ProfileError, match="no profile named 'ghost'"):
        resolve_model("c", {"c": ModelProfile(name="c", fallbacks=("ghost",))})


# ── concurrency ───────────────────────────────────────────────────────────────


class InFlight:
    """A server script that counts the requests it is answering at once."""

    def __init__(self, *, overlap_expected: bool = False) -> None:
        # Expecting overlap, a request waits (up to 5 s) for a second one to arrive, so
        # that a busy machine cannot hide it; otherwise 50 ms give one the chance to.
        self._wait_s = 5.0 if overlap_expected else 0.05
        self._overlap = threading.Event()
        self.now = 0
        self.most = 0
        self._lock = threading.Lock()

    def __call__(self, body: Any) -> FakeReply:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
            if self.now > 1:
                self._overlap.set()
        self._overlap.wait(self._wait_s)
        with self._lock:
            self.now -= 1
        return FakeReply.text("ok")


async def test_the_concurrency_limit_holds_across_models_built_with_the_same_limiters() -> None:
    counter = InFlight()
    limiters: dict[str, Limiter] = {}
    with FakeOpenAIServer(counter) as server:
        profile = on(server, concurrency=1)
        models = [build_model(profile, limiters=limiters) for _ in range(2)]
        request = ModelRequest(messages=(Message.user("x"),))
        await asyncio.gather(*(m.request(request) for m in models for _ in range(3)))
    assert counter.most == 1
    assert list(limiters) == ["p"]


async def test_without_a_limit_requests_overlap() -> None:
    counter = InFlight(overlap_expected=True)
    with FakeOpenAIServer(counter) as server:
        model = build_model(on(server))
        request = ModelRequest(messages=(Message.user("x"),))
        await asyncio.gather(*(model.request(request) for _ in range(4)))
    assert counter.most > 1


# ── anthropic ─────────────────────────────────────────────────────────────────


async def test_an_anthropic_profile_speaks_the_messages_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with FakeAnthropicServer([FakeReply.text("hello", input_tokens=100, output_tokens=10)]) as s:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", s.base_url)
        profiles = {
            "claude": ModelProfile(
                name="claude",
                provider="anthropic",
                model="claude-test",
                base_url=s.base_url,
                api_key_env="ANTHROPIC_API_KEY",
                max_output_tokens=321,
                prices=Prices(input=3.0, output=15.0),
            )
        }
        response = await resolve_model("claude", profiles).request(with_tools())
        by_string = resolve_model("anthropic:claude-test")
        body = s.requests[0].body
    assert response.message.content == "hello"
    assert body["max_tokens"] == 321
    assert response.usage.cost_usd == pytest.approx((100 * 3.0 + 10 * 15.0) / 1e6)
    assert by_string.name == "anthropic:claude-test"
    bottom: Any = by_string
    while hasattr(bottom, "inner"):
        bottom = bottom.inner
    assert isinstance(bottom, AnthropicModel)


def fallback_to(second: ModelProfile, limiters: dict[str, Limiter]) -> None:
    first = ModelProfile(
        name="first", base_url="http://127.0.0.1:9/v1", concurrency=1, fallbacks=(second.name,)
    )
    build_model(first, {second.name: second}, limiters=limiters)


def test_a_fallback_stack_whose_sdk_is_missing_builds_none_of_its_members(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)  # the SDK is not installed
    monkeypatch.delitem(sys.modules, "harness.gateway.providers.anthropic")
    limiters: dict[str, Limiter] = {}
    with pytest.raises(ConfigError, match="SDK is not installed"):
        fallback_to(ModelProfile(name="second", provider="anthropic", model="c"), limiters)
    assert limiters == {}  # the first member's stack was not built


def test_a_fallback_stack_without_credentials_builds_none_of_its_members(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    limiters: dict[str, Limiter] = {}
    with pytest.raises(ConfigError, match="no API key"):
        fallback_to(ModelProfile(name="second", provider="anthropic", model="c"), limiters)
    assert limiters == {}
