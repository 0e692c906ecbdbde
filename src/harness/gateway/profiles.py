"""Model profiles: named, configured models, and how a model string becomes a `Model`.

A profile says how to reach one model (provider, server, key), how to ask it (sampling
settings, timeout, retries, how it calls tools), what it costs, and what to use when it
fails (fallbacks). `build_model` turns a profile into a stack of `Model`s, outermost first:

```text
FallbackModel                      only when there are fallbacks; over one stack for the
│                                  profile, then its fallbacks (and theirs), each once
└── RetryingModel                  when max_retries > 0
    └── ConcurrencyLimitedModel    when concurrency is set
        └── ProfiledModel          default sampling settings, prices, streaming capability
            └── TextToolCallModel  when tool calls are parsed from the text;
                │   or TextCallRescueModel, in `auto` with native tools: calls written
                │   as text are read when the server returned none
                └── OpenAIModel | AnthropicModel
```

Concurrency is limited per profile, under the retries, so that a request waiting to retry
does not hold a slot, and a fallback to another server is not held back by the first
server's limit. `tool_calls = "auto"` means native tool calls unless the profile says the
server cannot parse them (`native_tools = false`); then harness describes the tools in the
prompt and reads the calls from the text, in whatever format the model writes. With native
tools, `auto` still reads a call the model wrote as text when the server returned none (a
server without the model's chat template); `native` trusts the server alone.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from harness.errors import ConfigError, ProfileError
from harness.gateway._profile_checks import PROVIDERS, Provider, problems, tool_call_formats
from harness.gateway.model import Model, ModelSettings, close_model
from harness.gateway.pricing import Prices
from harness.gateway.profiled import ProfiledModel
from harness.gateway.wrappers import (
    ConcurrencyLimitedModel,
    FallbackModel,
    Limiter,
    RetryingModel,
)

__all__ = [
    "BUILTIN_PROFILES",
    "DEFAULT_PROFILE",
    "LOCAL_PROFILE",
    "PROVIDERS",
    "ContextThresholds",
    "ModelProfile",
    "Provider",
    "build_model",
    "check_profiles",
    "provider_model",
    "resolve_model",
    "resolve_profile",
    "tool_call_formats",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class ContextThresholds:
    """When the context window manager compacts a conversation for this model.

    Shares are of the profile's `context_window`; `None` keeps the manager's default
    (trim above 0.6, summarize above 0.8, stage summary above 0.95, keep the last 4 turns).
    """

    trim_at: float | None = None
    """Above this share, remove the oldest turns."""
    summarize_at: float | None = None
    """Above this share, have the model summarize the older history."""
    stage_at: float | None = None
    """Above this share, have the model write a stage summary and continue from it."""
    keep_last_turns: int | None = None
    """Turns always sent as they are (an assistant message with its tool results)."""

    def overrides(self) -> dict[str, float | int]:
        """The thresholds that are set, by name."""
        values = {
            "trim_at": self.trim_at,
            "summarize_at": self.summarize_at,
            "stage_at": self.stage_at,
            "keep_last_turns": self.keep_last_turns,
        }
        return {key: value for key, value in values.items() if value is not None}


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelProfile:
    """How to reach one model, how to ask it, what it costs, and what can replace it.

    Raises:
        ProfileError: A value the profile cannot use; the error names the key.
    """

    name: str
    """The profile's name, as used in `--model NAME`."""
    provider: Provider = "openai"
    """The wire protocol: `openai` (any OpenAI-compatible server) or `anthropic`."""
    model: str = "local"
    """The model name sent to the server (llama.cpp serves one model whatever the name)."""
    base_url: str | None = None
    """The server's API root, e.g. `http://localhost:8080/v1`; `None` is the provider's own."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key; the key itself is never stored."""
    context_window: int | None = None
    """Tokens the model can attend to; `None` when unknown (`harness models check` asks)."""
    max_output_tokens: int | None = None
    """Default upper bound on generated tokens."""
    temperature: float | None = None
    """Default sampling temperature; `None` leaves the server's."""
    top_p: float | None = None
    """Default nucleus sampling mass."""
    seed: int | None = None
    """Default seed, for servers that sample reproducibly."""
    stop: tuple[str, ...] = ()
    """Default stop sequences."""
    parallel_tool_calls: bool | None = None
    """Whether the model may call several tools in one turn; `None` leaves the server's."""
    extra_body: Mapping[str, Any] = field(default_factory=lambda: {})
    """Provider-specific request fields sent as they are (e.g. llama.cpp's `top_k`, `min_p`)."""
    timeout_s: float = 600.0
    """Seconds to wait for a response."""
    max_retries: int = 2
    """Retries of a request that failed in a retryable way; 0 disables them."""
    fallbacks: tuple[str, ...] = ()
    """Profiles (or `provider:model` strings) tried in order when this one fails."""
    concurrency: int | None = None
    """Requests sent to this model at once; `None` is unlimited."""
    prices: Prices | None = None
    """US dollars per million input, output and cached input tokens; `None` when unknown
    (then its responses are not priced, and `harness cost` shows their cost as unknown).
    All zero declares the model free."""
    tool_calls: str = "auto"
    """How tool calls come back: `native` (parsed by the server), `text:FORMAT` (parsed by
    harness from the text, e.g. `text:hermes`), or `auto`: native, unless `native_tools` is
    false, then parsed from the text in whatever format the model writes; with native tools,
    a reply with no native call whose text holds one has that call read and run."""
    native_tools: bool = True
    """Capability: the server takes tool definitions and returns parsed tool calls (llama.cpp
    with `--jinja`, vLLM with `--enable-auto-tool-choice`, OpenAI, Anthropic)."""
    streaming: bool = True
    """Capability: the server streams answers; when false, a stream is one whole response."""
    structured_output: bool = True
    """Capability: the server constrains an answer to a JSON Schema (`response_format`, the
    json_schema kind). When false it is never sent; agents with an output type still get
    their answers checked and repaired."""
    context: ContextThresholds = field(default_factory=ContextThresholds)
    """When the context window manager compacts conversations sent to this model."""

    def __post_init__(self) -> None:
        for key, problem in problems(self):
            raise ProfileError(self.name, key, problem)

    def api_key(self) -> str | None:
        """The API key from the environment, or `None`."""
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    @property
    def settings(self) -> ModelSettings:
        """The profile's sampling settings: the defaults of every request it serves."""
        return ModelSettings(
            temperature=self.temperature,
            top_p=self.top_p,
            max_output_tokens=self.max_output_tokens,
            seed=self.seed,
            stop=self.stop,
            parallel_tool_calls=self.parallel_tool_calls,
            extra_body=dict(self.extra_body) or None,
        )

    @property
    def text_format(self) -> str | None:
        """The format harness parses tool calls from, or `None` when the server does."""
        if self.tool_calls.startswith("text:"):
            return self.tool_calls.removeprefix("text:")
        if self.tool_calls == "auto" and not self.native_tools:
            return "auto"
        return None


LOCAL_PROFILE = ModelProfile(
    name="local",
    provider="openai",
    model="local",
    base_url="http://localhost:8080/v1",
    prices=Prices(),
)
"""A llama.cpp server on this machine: `llama-server -m MODEL.gguf --jinja --port 8080`.
It is free (its prices are declared zero): nothing is paid per token."""

BUILTIN_PROFILES: Mapping[str, ModelProfile] = {"local": LOCAL_PROFILE}
"""Profiles that exist without configuration; `harness.toml` may change their keys."""

DEFAULT_PROFILE = "local"
"""The profile used when no model is named."""


def resolve_profile(
    spec: str,
    profiles: Mapping[str, ModelProfile] | None = None,
    *,
    base_url: str | None = None,
) -> ModelProfile:
    """The profile named `spec`, or one made for a `provider:MODEL` string.

    Args:
        spec: A profile name (`local` is built in), `openai:MODEL` or `anthropic:MODEL`.
        profiles: Profiles from configuration, by name; they replace built-ins of that name.
        base_url: Overrides the server address of the profile.

    Raises:
        ConfigError: The name is neither a known profile nor `provider:MODEL`.
    """
    profile = _find_profile(spec, {**BUILTIN_PROFILES, **(profiles or {})})
    return dataclasses.replace(profile, base_url=base_url) if base_url else profile


def resolve_model(
    spec: str | Model,
    profiles: Mapping[str, ModelProfile] | None = None,
    *,
    base_url: str | None = None,
    limiters: MutableMapping[str, Limiter] | None = None,
) -> Model:
    """Turn a profile name or `provider:MODEL` into a `Model`; a `Model` passes through.

    Args:
        spec: A profile name (`local` is built in), `openai:MODEL`, `anthropic:MODEL`, or a
            `Model`.
        profiles: Profiles from configuration, by name.
        base_url: Overrides the server address of an `openai:` model or a profile (not of
            its fallbacks).
        limiters: Concurrency limiters shared between the models built; see `build_model`.

    Raises:
        ConfigError: The name is neither a known profile nor `provider:MODEL`, or the
            profile's fallbacks are broken.
    """
    if not isinstance(spec, str):
        return spec
    profile = resolve_profile(spec, profiles, base_url=base_url)
    return build_model(profile, profiles, limiters=limiters)


def check_profiles(profiles: Mapping[str, ModelProfile]) -> None:
    """Check what no single profile can: that fallbacks exist and never lead back.

    Raises:
        ProfileError: A fallback names no profile, or fallbacks form a cycle.
    """
    known = {**BUILTIN_PROFILES, **profiles}
    for profile in profiles.values():
        _fallback_chain(profile, known)


def build_model(
    profile: ModelProfile,
    profiles: Mapping[str, ModelProfile] | None = None,
    *,
    limiters: MutableMapping[str, Limiter] | None = None,
) -> Model:
    """The `Model` stack of `profile`, its fallbacks included (see the module docstring).

    Args:
        profile: The profile to build.
        profiles: Where its fallbacks are looked up, by name (built-ins are added).
        limiters: The concurrency limiters of profiles, by name, shared by every stack
            built with the same mapping (a profile that is also another's fallback keeps
            one limit); a limiter is added for each profile with `concurrency` set.

    Raises:
        ConfigError: A fallback is unknown or the fallbacks form a cycle, or a member's
            provider model cannot be made (its SDK is missing, no credentials); then the
            provider models already made are closed, and no limiter is added.
    """
    known = {**BUILTIN_PROFILES, **(profiles or {})}
    chain = _fallback_chain(profile, known)
    shared: MutableMapping[str, Limiter] = {} if limiters is None else limiters
    providers = _providers(chain)
    members = [
        _member(member, provider, shared) for member, provider in zip(chain, providers, strict=True)
    ]
    if len(members) == 1:
        return members[0]
    return FallbackModel(members, context_windows=[member.context_window for member in chain])


def provider_model(profile: ModelProfile) -> Model:
    """The bare provider model of `profile`: no text parsing, defaults, retries or fallbacks."""
    label = profile.name if ":" in profile.name else f"{profile.name} ({profile.model})"
    if profile.provider == "anthropic":
        try:
            from harness.gateway.providers.anthropic import AnthropicModel
        except ModuleNotFoundError as exc:
            raise ConfigError(
                f"model {profile.name!r} uses the Anthropic API, but its SDK is not installed: "
                "pip install 'harness[anthropic]' (or -e '.[anthropic]' in a checkout)"
            ) from exc

        # The profile's max_output_tokens reaches each request through its settings.
        return AnthropicModel(
            profile.model,
            base_url=profile.base_url,
            api_key=profile.api_key(),
            timeout_s=profile.timeout_s,
            label=label,
        )
    from harness.gateway.providers.openai import OpenAIModel

    return OpenAIModel(
        profile.model,
        base_url=profile.base_url,
        api_key=profile.api_key(),
        timeout_s=profile.timeout_s,
        label=label,
    )


def _providers(chain: list[ModelProfile]) -> list[Model]:
    """The provider model of each profile; all of them, or none (the ones made are closed).

    Raises:
        ConfigError: A provider model cannot be made.
    """
    made: list[Model] = []
    try:
        for profile in chain:
            made.append(provider_model(profile))
    except BaseException:
        for model in made:
            _close_soon(model)
        raise
    return made


_closing: set[asyncio.Task[None]] = set()
"""Closes of models that a failed build made, until they are done."""


def _close_soon(model: Model) -> None:
    """Close a model from synchronous code: on the running loop, or on a loop of its own."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(close_model(model))
        return
    task = loop.create_task(close_model(model))
    _closing.add(task)
    task.add_done_callback(_closing.discard)


def _member(profile: ModelProfile, model: Model, limiters: MutableMapping[str, Limiter]) -> Model:
    """One profile's own stack over its provider `model`, without its fallbacks."""
    text_format = profile.text_format
    if text_format is not None:
        from harness.gateway.textcalls import TextToolCallModel

        model = TextToolCallModel(model, format=text_format, family=profile.model)
    elif profile.tool_calls == "auto":
        from harness.gateway.textcalls.rescue import TextCallRescueModel

        model = TextCallRescueModel(model, family=profile.model)
    model = ProfiledModel(model, profile)
    if profile.concurrency:
        limiter = limiters.get(profile.name)
        if limiter is None:
            limiter = limiters[profile.name] = asyncio.Semaphore(profile.concurrency)
        model = ConcurrencyLimitedModel(model, limiter)
    if profile.max_retries:
        model = RetryingModel(model, max_retries=profile.max_retries)
    return model


def _fallback_chain(profile: ModelProfile, known: Mapping[str, ModelProfile]) -> list[ModelProfile]:
    """The profile, then its fallbacks depth first, each once.

    Raises:
        ProfileError: A fallback is unknown, or leads back to a profile on its own path.
    """
    chain: dict[str, ModelProfile] = {}

    def visit(current: ModelProfile, path: tuple[str, ...]) -> None:
        chain.setdefault(current.name, current)
        for spec in current.fallbacks:
            if spec in path:
                cycle = " → ".join((*path[path.index(spec) :], spec))
                raise ProfileError(
                    current.name,
                    "fallbacks",
                    f"the fallbacks form a cycle ({cycle}): remove one of them",
                )
            if spec not in known and not _is_provider_spec(spec):
                raise ProfileError(
                    current.name,
                    "fallbacks",
                    f"no profile named {spec!r} (profiles: {', '.join(sorted(known))}): "
                    "name a profile, or 'openai:MODEL' or 'anthropic:MODEL'",
                )
            fallback = _find_profile(spec, known)
            visit(fallback, (*path, fallback.name))

    visit(profile, (profile.name,))
    return list(chain.values())


def _find_profile(spec: str, profiles: Mapping[str, ModelProfile]) -> ModelProfile:
    if spec in profiles:
        return profiles[spec]
    provider, _, model = spec.partition(":")
    if _is_provider_spec(spec):
        env = provider.upper()
        return ModelProfile(
            name=spec,
            provider="anthropic" if provider == "anthropic" else "openai",
            model=model,
            base_url=os.environ.get(f"{env}_BASE_URL"),
            api_key_env=f"{env}_API_KEY",
        )
    known = ", ".join(sorted(profiles))
    raise ConfigError(
        f"unknown model {spec!r}: use a profile name ({known}), 'openai:MODEL_NAME' "
        "(with --base-url for any OpenAI-compatible server) or 'anthropic:MODEL_NAME'"
    )


def _is_provider_spec(spec: str) -> bool:
    provider, sep, model = spec.partition(":")
    return bool(sep and model) and provider in PROVIDERS
