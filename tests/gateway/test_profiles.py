"""Model profiles: validation, prices, defaults applied by `ProfiledModel`, resolution."""

from __future__ import annotations

import dataclasses

import pytest

from harness.core.messages import Message
from harness.core.usage import Usage
from harness.errors import ConfigError, ProfileError
from harness.gateway.model import (
    Model,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ResponseDone,
    ResponseFormat,
    StreamEvent,
    TextDelta,
)
from harness.gateway.pricing import Prices
from harness.gateway.profiled import ProfiledModel, find_profile, merge_settings
from harness.gateway.profiles import (
    LOCAL_PROFILE,
    ContextThresholds,
    ModelProfile,
    build_model,
    check_profiles,
    resolve_profile,
    tool_call_formats,
)
from harness.gateway.scripted import FunctionModel
from harness.gateway.wrappers import FallbackModel

PRICES = Prices(input=2.0, output=8.0, cached_input=0.5)


def answer(usage: Usage) -> FunctionModel:
    """A model answering "ok" with `usage`, keeping every request."""
    return FunctionModel(
        lambda _: ModelResponse(message=Message.assistant("ok"), finish_reason="stop", usage=usage)
    )


def a_request(settings: ModelSettings | None = None) -> ModelRequest:
    return ModelRequest(messages=(Message.user("hi"),), settings=settings or ModelSettings())


async def events_of(model: Model, request: ModelRequest) -> list[StreamEvent]:
    return [event async for event in model.stream(request)]


# ── prices ────────────────────────────────────────────────────────────────────


def test_input_output_and_cached_input_are_priced_separately() -> None:
    usage = Usage(input_tokens=1_000_000, cached_tokens=400_000, output_tokens=500_000)
    # 600k uncached at $2, 400k cached at $0.50, 500k out at $8 (per million)
    assert PRICES.cost(usage) == pytest.approx(1.2 + 0.2 + 4.0)


def test_cached_tokens_cost_the_input_price_when_no_cached_price_is_given() -> None:
    usage = Usage(input_tokens=1_000_000, cached_tokens=400_000)
    assert Prices(input=2.0).cost(usage) == pytest.approx(2.0)


def test_no_prices_cost_nothing() -> None:
    assert Prices().free
    assert Prices().cost(Usage(input_tokens=10**9, output_tokens=10**9)) == 0.0
    assert not Prices(cached_input=0.1).free


# ── ProfiledModel ─────────────────────────────────────────────────────────────


async def test_each_response_carries_its_cost() -> None:
    usage = Usage(input_tokens=3000, cached_tokens=1000, output_tokens=500, requests=1)
    model = ProfiledModel(answer(usage), ModelProfile(name="paid", prices=PRICES))
    expected = (2000 * 2.0 + 1000 * 0.5 + 500 * 8.0) / 1_000_000

    response = await model.request(a_request())
    assert response.usage.cost_usd == pytest.approx(expected)
    assert dataclasses.replace(response.usage, cost_usd=0.0) == usage
    assert (response.profile, response.prices) == ("paid", PRICES)

    events = await events_of(model, a_request())
    assert isinstance(events[-1], ResponseDone)
    assert events[-1].response.usage.cost_usd == pytest.approx(expected)


async def test_a_free_profile_leaves_the_reported_cost() -> None:
    usage = Usage(input_tokens=10, output_tokens=5, cost_usd=0.25)
    response = await ProfiledModel(answer(usage), LOCAL_PROFILE).request(a_request())
    assert response.usage.cost_usd == 0.25
    assert (response.profile, response.prices) == ("local", Prices())  # known: free


async def test_a_profile_without_prices_says_its_price_is_unknown() -> None:
    usage = Usage(input_tokens=10, output_tokens=5)
    response = await ProfiledModel(answer(usage), ModelProfile(name="x")).request(a_request())
    assert (response.profile, response.prices, response.usage.cost_usd) == ("x", None, 0.0)
    assert ModelProfile(name="openai:gpt-x").prices is None


async def test_the_profile_sampling_settings_are_defaults_the_request_overrides() -> None:
    inner = answer(Usage())
    profile = ModelProfile(
        name="tuned",
        temperature=0.2,
        top_p=0.9,
        max_output_tokens=512,
        seed=7,
        stop=("</done>",),
        extra_body={"top_k": 20, "min_p": 0.05},
    )
    model = ProfiledModel(inner, profile)

    await model.request(a_request())
    assert inner.requests[-1].settings == ModelSettings(
        temperature=0.2,
        top_p=0.9,
        max_output_tokens=512,
        seed=7,
        stop=("</done>",),
        extra_body={"top_k": 20, "min_p": 0.05},
    )

    own = ModelSettings(temperature=0.0, stop=("STOP",), extra_body={"top_k": 5})
    await events_of(model, a_request(own))
    sent = inner.requests[-1].settings
    assert (sent.temperature, sent.top_p, sent.max_output_tokens, sent.seed) == (0.0, 0.9, 512, 7)
    assert sent.stop == ("STOP",)
    assert sent.extra_body == {"top_k": 5, "min_p": 0.05}


def test_merging_keeps_values_that_are_set_but_false_or_zero() -> None:
    merged = merge_settings(
        ModelSettings(temperature=0.7, parallel_tool_calls=True),
        ModelSettings(temperature=0.0, parallel_tool_calls=False),
    )
    assert (merged.temperature, merged.parallel_tool_calls) == (0.0, False)


async def test_a_server_that_cannot_stream_gets_one_whole_request() -> None:
    model = ProfiledModel(answer(Usage()), ModelProfile(name="batch", streaming=False))
    events = await events_of(model, a_request())
    assert len(events) == 1
    assert isinstance(events[0], ResponseDone)
    assert events[0].response.message.content == "ok"

    streamed = await events_of(ProfiledModel(answer(Usage()), LOCAL_PROFILE), a_request())
    assert any(isinstance(event, TextDelta) for event in streamed)


async def test_the_profiled_model_keeps_the_inner_name_and_knows_its_window() -> None:
    inner = answer(Usage())
    model = ProfiledModel(inner, ModelProfile(name="w", context_window=8192))
    assert (model.name, model.context_window, model.inner) == ("function", 8192, inner)


async def test_a_profile_without_structured_output_drops_the_schema() -> None:
    schema = ResponseFormat(name="r", schema={"type": "object"})
    for supported in (True, False):
        inner = answer(Usage())
        profile = ModelProfile(name="p", structured_output=supported)
        await ProfiledModel(inner, profile).request(
            a_request(ModelSettings(response_format=schema))
        )
        assert inner.requests[-1].settings.response_format == (schema if supported else None)


def test_the_profile_of_a_stack_is_found_through_its_wrappers() -> None:
    main = ModelProfile(
        name="main",
        base_url="http://127.0.0.1:9/v1",
        context_window=4096,
        concurrency=2,
        tool_calls="text:hermes",
        fallbacks=("spare",),
    )
    spare = ModelProfile(name="spare", base_url="http://127.0.0.1:9/v1", context_window=128_000)
    stack = build_model(main, {"spare": spare})
    assert find_profile(stack) == main
    assert find_profile(build_model(spare)) == spare
    assert find_profile(answer(Usage())) is None


# ── validation ────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("changes", "key", "says"),
    [
        ({"provider": "cohere"}, "provider", "unknown provider 'cohere'"),
        ({"model": ""}, "model", "must not be empty"),
        ({"base_url": "localhost:8080"}, "base_url", "not an http(s) URL"),
        ({"timeout_s": 0}, "timeout_s", "greater than 0"),
        ({"context_window": -1}, "context_window", "greater than 0"),
        ({"max_output_tokens": 0}, "max_output_tokens", "greater than 0"),
        ({"concurrency": 0}, "concurrency", "greater than 0"),
        ({"max_retries": -1}, "max_retries", "0 or more"),
        ({"temperature": -0.1}, "temperature", "0 or more"),
        ({"top_p": 1.5}, "top_p", "(0, 1]"),
        ({"prices": Prices(input=-1.0)}, "prices.input", "cannot be negative"),
        ({"prices": Prices(output=-1.0)}, "prices.output", "cannot be negative"),
        ({"prices": Prices(cached_input=-0.5)}, "prices.cached_input", "cannot be negative"),
        ({"tool_calls": "sometimes"}, "tool_calls", "unknown tool call mode 'sometimes'"),
        ({"context": ContextThresholds(trim_at=0.0)}, "context.trim_at", "in (0, 1]"),
        ({"context": ContextThresholds(stage_at=1.2)}, "context.stage_at", "in (0, 1]"),
        (
            {"context": ContextThresholds(summarize_at=0.9, stage_at=0.8)},
            "context.stage_at",
            "must not be below summarize_at (0.9)",
        ),
        (
            {"context": ContextThresholds(keep_last_turns=0)},
            "context.keep_last_turns",
            "at least 1",
        ),
    ],
)
def test_a_value_the_profile_cannot_use_names_the_key(
    changes: dict[str, object], key: str, says: str
) -> None:
    with pytest.raises(ProfileError) as caught:
        ModelProfile(name="bad", **changes)  # type: ignore[arg-type]
    assert (caught.value.profile, caught.value.key) == ("bad", key)
    assert says in caught.value.problem
    assert isinstance(caught.value, ConfigError)


@pytest.mark.parametrize(
    "mode",
    ["native", "auto", "text:auto", "text:hermes", "text:qwen3_coder", "text:functionary_v3.1"],
)
def test_known_tool_call_modes_are_accepted(mode: str) -> None:
    assert ModelProfile(name="m", tool_calls=mode).tool_calls == mode


def test_an_unknown_text_format_lists_the_known_ones() -> None:
    with pytest.raises(ProfileError) as caught:
        ModelProfile(name="x", tool_calls="text:xml")
    assert "'text:xml'" in caught.value.problem
    for known in ("hermes", "llama3_json", "mistral_v13", "harmony", "pythonic_lfm2", "kimi_k2"):
        assert known in caught.value.problem
    assert set(tool_call_formats()) >= {"hermes", "deepseek_r1", "command_r7b"}


def test_tool_call_modes() -> None:
    assert ModelProfile(name="t", tool_calls="text:hermes").text_format == "hermes"
    assert ModelProfile(name="n", tool_calls="native").text_format is None
    assert ModelProfile(name="a", tool_calls="auto").text_format is None
    assert ModelProfile(name="a", tool_calls="auto", native_tools=False).text_format == "auto"


def test_fallbacks_must_name_profiles() -> None:
    fast = ModelProfile(name="fast", fallbacks=("local", "openai:gpt-4.1-mini", "slow"))
    with pytest.raises(ProfileError) as caught:
        check_profiles({"fast": fast})
    assert caught.value.key == "fallbacks"
    assert "no profile named 'slow'" in caught.value.problem
    check_profiles({"fast": fast, "slow": ModelProfile(name="slow")})


@pytest.mark.parametrize(
    ("fallbacks", "cycle"),
    [
        ({"a": ("a",)}, "a → a"),
        ({"a": ("b",), "b": ("a",)}, "a → b → a"),
        ({"a": ("b",), "b": ("c",), "c": ("b",)}, "b → c → b"),
    ],
)
def test_fallbacks_never_lead_back(fallbacks: dict[str, tuple[str, ...]], cycle: str) -> None:
    profiles = {name: ModelProfile(name=name, fallbacks=fb) for name, fb in fallbacks.items()}
    with pytest.raises(ProfileError, match="cycle") as caught:
        check_profiles(profiles)
    assert cycle in caught.value.problem


def test_a_fallback_reached_twice_is_not_a_cycle() -> None:
    profiles = {
        "a": ModelProfile(name="a", fallbacks=("b", "c")),
        "b": ModelProfile(name="b", fallbacks=("c",)),
        "c": ModelProfile(name="c"),
    }
    check_profiles(profiles)
    model = build_model(profiles["a"], profiles)
    assert isinstance(model, FallbackModel)
    members = [find_profile(member) for member in model.models]
    assert [p.name for p in members if p is not None] == ["a", "b", "c"]


# ── resolution ────────────────────────────────────────────────────────────────


def test_the_local_profile_is_built_in_and_can_be_replaced() -> None:
    assert resolve_profile("local") is LOCAL_PROFILE
    assert LOCAL_PROFILE.base_url == "http://localhost:8080/v1"
    mine = ModelProfile(name="local", base_url="http://127.0.0.1:9000/v1")
    assert resolve_profile("local", {"local": mine}) is mine
    moved = resolve_profile("local", base_url="http://127.0.0.1:9001/v1")
    assert moved.base_url == "http://127.0.0.1:9001/v1"


def test_provider_strings_take_their_address_and_key_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/anthropic")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    claude = resolve_profile("anthropic:claude-sonnet-4-5")
    assert (claude.provider, claude.model, claude.base_url, claude.api_key_env) == (
        "anthropic",
        "claude-sonnet-4-5",
        "http://127.0.0.1:9/anthropic",
        "ANTHROPIC_API_KEY",
    )
    ollama = resolve_profile("openai:qwen3:8b")
    assert (ollama.provider, ollama.model, ollama.base_url, ollama.api_key_env) == (
        "openai",
        "qwen3:8b",
        None,
        "OPENAI_API_KEY",
    )


def test_an_unknown_model_says_what_is_possible() -> None:
    with pytest.raises(ConfigError, match=r"unknown model 'mistral:large'.*anthropic:MODEL"):
        resolve_profile("mistral:large")


def test_the_api_key_is_read_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "sk-test")
    assert ModelProfile(name="k", api_key_env="MY_KEY").api_key() == "sk-test"
    assert ModelProfile(name="k").api_key() is None
