"""Checking a model profile against its server, as `harness models check` does.

Two tiny requests go to the profile's bare provider model (no retries, fallbacks or text
parsing, so that the answer is the server's own): a plain one, for reachability and
latency, and one offering a trivial tool, to see whether the server returns native tool
calls. The context window comes from the profile, or from the server when it says:
llama.cpp's `GET /props` (`n_ctx`) or an OpenAI-compatible `GET /models` entry
(`max_model_len` from vLLM, `context_length` or `context_window` elsewhere).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, cast

from harness.core.messages import Message, ToolDefinition
from harness.errors import ModelConnectionError, ModelError
from harness.gateway.model import Model, ModelRequest, ModelResponse, ModelSettings
from harness.gateway.profiled import merge_settings
from harness.gateway.profiles import ModelProfile, provider_model

__all__ = ["PROBE_TOOL", "ModelCheck", "check_profile", "server_context_window"]

PROBE_TOOL = ToolDefinition(
    name="add",
    description="Add two integers and return their sum.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
"""The trivial tool offered to see whether native tool calls come back."""

_PLAIN = "Reply with the single word: ready"
_WITH_TOOL = "Use the add tool to add 2 and 3. Call the tool; do not answer in text."
_PLAIN_TOKENS = 256
_TOOL_TOKENS = 1024
"""Room for a reasoning model to think before it calls the tool."""
_INFO_TIMEOUT_S = 10.0


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelCheck:
    """What `check_profile` found out about one profile's server."""

    profile: str
    """The profile's name."""
    provider: str
    """The profile's provider."""
    model: str
    """The model name sent to the server."""
    base_url: str | None
    """The server's API root; `None` is the provider's own."""
    reachable: bool
    """Whether the server answered at all (an HTTP error counts as an answer)."""
    answered: bool = False
    """Whether the plain request got a response."""
    latency_s: float | None = None
    """Seconds the plain request took, when it was answered."""
    reply: str | None = None
    """The start of the answer to the plain request."""
    native_tool_calls: bool | None = None
    """Whether the server returned the tool call as a native call; `None` when not tried."""
    tool_reply: str | None = None
    """What came back instead of a native tool call (text, or the server's error)."""
    context_window: int | None = None
    """The context window in use: the profile's, else the server's."""
    context_window_source: Literal["profile", "server"] | None = None
    """Where `context_window` came from."""
    server_context_window: int | None = None
    """The window the server reported, when it did."""
    error: str | None = None
    """Why the plain request failed."""

    @property
    def ok(self) -> bool:
        """Whether the model answered."""
        return self.answered

    def as_dict(self) -> dict[str, Any]:
        """The check as JSON-compatible data."""
        return dataclasses.asdict(self) | {"ok": self.ok}


async def check_profile(
    profile: ModelProfile, *, clock: Callable[[], float] = time.perf_counter
) -> ModelCheck:
    """Send one tiny request, then one with a trivial tool, and report what happened.

    Args:
        profile: The profile to check; its fallbacks are not checked.
        clock: Measures latency in seconds.
    """
    server_window = await server_context_window(profile)
    window, source = _window(profile, server_window)
    base = ModelCheck(
        profile=profile.name,
        provider=profile.provider,
        model=profile.model,
        base_url=profile.base_url,
        reachable=False,
        context_window=window,
        context_window_source=source,
        server_context_window=server_window,
    )
    model = provider_model(profile)
    try:
        started = clock()
        try:
            response = await model.request(_request(profile, _PLAIN, _PLAIN_TOKENS))
        except ModelError as exc:
            reachable = not isinstance(exc, ModelConnectionError)
            return dataclasses.replace(base, reachable=reachable, error=str(exc))
        latency = clock() - started
        native, tool_reply = await _try_tools(model, profile)
    finally:
        await _close(model)
    return dataclasses.replace(
        base,
        reachable=True,
        answered=True,
        latency_s=latency,
        reply=_excerpt(response.message.content or response.message.reasoning),
        native_tool_calls=native,
        tool_reply=tool_reply,
    )


async def server_context_window(profile: ModelProfile) -> int | None:
    """The context window the profile's server reports, or `None`.

    Only OpenAI-compatible servers with a `base_url` are asked (hosted APIs do not say).
    """
    if profile.provider != "openai" or not profile.base_url:
        return None
    base = profile.base_url.rstrip("/")
    root = base.removesuffix("/v1")
    headers = {"Authorization": f"Bearer {key}"} if (key := profile.api_key()) else {}
    timeout = min(profile.timeout_s, _INFO_TIMEOUT_S)
    props = await asyncio.to_thread(_get_json, f"{root}/props", headers, timeout)
    window = _props_window(props)
    if window is None:
        listing = await asyncio.to_thread(_get_json, f"{base}/models", headers, timeout)
        window = _listing_window(listing, profile.model)
    return window


async def _try_tools(model: Model, profile: ModelProfile) -> tuple[bool, str | None]:
    request = _request(profile, _WITH_TOOL, _TOOL_TOKENS, tools=(PROBE_TOOL,))
    try:
        response: ModelResponse = await model.request(request)
    except ModelError as exc:  # e.g. llama.cpp without --jinja refuses tools
        return False, str(exc)
    calls = response.message.tool_calls
    if any(call.name == PROBE_TOOL.name for call in calls):
        return True, None
    text = response.message.content or response.message.reasoning or "(an empty answer)"
    return False, _excerpt(text)


def _request(
    profile: ModelProfile, text: str, tokens: int, tools: tuple[ToolDefinition, ...] = ()
) -> ModelRequest:
    own = ModelSettings(max_output_tokens=tokens, temperature=0.0)
    return ModelRequest(
        messages=(Message.user(text),),
        tools=tools,
        settings=merge_settings(profile.settings, own),
    )


def _window(
    profile: ModelProfile, server: int | None
) -> tuple[int | None, Literal["profile", "server"] | None]:
    if profile.context_window is not None:
        return profile.context_window, "profile"
    if server is not None:
        return server, "server"
    return None, None


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Refuses redirects: urllib would send the API key on to wherever they point."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def _get_json(url: str, headers: dict[str, str], timeout: float) -> Any:
    """The JSON body of `GET url`, or `None` on any failure, a redirect included."""
    request = urllib.request.Request(url, headers={"Accept": "application/json", **headers})
    try:
        with _OPENER.open(request, timeout=timeout) as answer:
            return json.loads(answer.read())
    except (OSError, ValueError):
        return None


def _props_window(props: Any) -> int | None:
    if not isinstance(props, dict):
        return None
    data = cast("dict[str, Any]", props)
    settings = data.get("default_generation_settings")
    nested = cast("dict[str, Any]", settings).get("n_ctx") if isinstance(settings, dict) else None
    return _positive_int(nested if nested is not None else data.get("n_ctx"))


def _listing_window(listing: Any, model: str) -> int | None:
    entries = cast("dict[str, Any]", listing).get("data") if isinstance(listing, dict) else None
    if not isinstance(entries, list):
        return None
    found = [cast("dict[str, Any]", e) for e in cast("list[Any]", entries) if isinstance(e, dict)]
    chosen = [e for e in found if e.get("id") == model] or (found if len(found) == 1 else [])
    for entry in chosen:
        for key in ("max_model_len", "context_length", "context_window"):
            window = _positive_int(entry.get(key))
            if window is not None:
                return window
    return None


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _excerpt(text: str | None, limit: int = 200) -> str | None:
    if text is None:
        return None
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "…"


async def _close(model: Model) -> None:
    closer: Callable[[], Any] | None = getattr(model, "aclose", None)
    if closer is not None:
        with contextlib.suppress(Exception):
            await closer()
