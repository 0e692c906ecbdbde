"""Model profiles: named, configured models, and how a model string becomes a `Model`."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from harness.errors import ConfigError
from harness.gateway.model import Model

__all__ = ["DEFAULT_PROFILE", "LOCAL_PROFILE", "ModelProfile", "resolve_model"]

Provider = Literal["openai"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelProfile:
    """How to reach one model and what it can do."""

    name: str
    """The profile's name, as used in `--model NAME`."""
    provider: Provider = "openai"
    """The wire protocol: `openai` covers every OpenAI-compatible server."""
    model: str = "local"
    """The model name sent to the server (llama.cpp serves one model whatever the name)."""
    base_url: str | None = None
    """The server's API root, e.g. `http://localhost:8080/v1`; `None` is the provider's own."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key; the key itself is never stored."""
    timeout_s: float = 600.0
    """Seconds to wait for a response."""
    context_window: int | None = None
    """Tokens the model can attend to, when known."""

    def api_key(self) -> str | None:
        """The API key from the environment, or `None`."""
        return os.environ.get(self.api_key_env) if self.api_key_env else None


LOCAL_PROFILE = ModelProfile(
    name="local", provider="openai", model="local", base_url="http://localhost:8080/v1"
)
"""A llama.cpp server on this machine: `llama-server -m MODEL.gguf --jinja --port 8080`."""

DEFAULT_PROFILE = "local"


def resolve_model(
    spec: str | Model,
    profiles: Mapping[str, ModelProfile] | None = None,
    *,
    base_url: str | None = None,
) -> Model:
    """Turn a profile name or `openai:MODEL` into a `Model`; a `Model` passes through.

    Args:
        spec: A profile name (`local` is built in), `openai:MODEL_NAME`, or a `Model`.
        profiles: Profiles from configuration, by name.
        base_url: Overrides the server address of an `openai:` model or a profile.

    Raises:
        ConfigError: The name is neither a known profile nor `provider:model`.
    """
    if not isinstance(spec, str):
        return spec
    profile = _find_profile(spec, {"local": LOCAL_PROFILE, **(profiles or {})})
    if base_url:
        profile = dataclasses.replace(profile, base_url=base_url)
    return _build(profile)


def _find_profile(spec: str, profiles: Mapping[str, ModelProfile]) -> ModelProfile:
    if spec in profiles:
        return profiles[spec]
    provider, sep, model = spec.partition(":")
    if sep and provider == "openai" and model:
        return ModelProfile(
            name=spec,
            model=model,
            base_url=os.environ.get("OPENAI_BASE_URL"),
            api_key_env="OPENAI_API_KEY",
        )
    known = ", ".join(sorted(profiles))
    raise ConfigError(
        f"unknown model {spec!r}: use a profile name ({known}) or 'openai:MODEL_NAME' "
        "(with --base-url for any OpenAI-compatible server)"
    )


def _build(profile: ModelProfile) -> Model:
    from harness.gateway.providers.openai import OpenAIModel

    return OpenAIModel(
        profile.model,
        base_url=profile.base_url,
        api_key=profile.api_key(),
        timeout_s=profile.timeout_s,
        label=profile.name if ":" in profile.name else f"{profile.name} ({profile.model})",
    )
