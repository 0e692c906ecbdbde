"""`check_profile`: two tiny requests and the server's context window, over real HTTP."""

from __future__ import annotations

import http.server
import socket
import threading

import pytest

from harness.gateway.probe import PROBE_TOOL, check_profile, server_context_window
from harness.gateway.profiles import ModelProfile
from harness.testing import FakeOpenAIServer, FakeReply


def profile_for(server: FakeOpenAIServer, **changes: object) -> ModelProfile:
    return ModelProfile(name="probe", model="fake-model", base_url=server.base_url, **changes)  # type: ignore[arg-type]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


ANSWERS = [FakeReply.text("ready"), FakeReply.tool_call("add", {"a": 2, "b": 3})]


async def test_a_server_with_native_tool_calls() -> None:
    with FakeOpenAIServer(
        ANSWERS, props={"default_generation_settings": {"n_ctx": 8192}}
    ) as server:
        check = await check_profile(profile_for(server, temperature=0.7, extra_body={"top_k": 9}))
        posts = [r.body for r in server.requests if r.method == "POST"]
    assert (check.reachable, check.answered, check.ok) == (True, True, True)
    assert check.reply == "ready"
    assert check.latency_s is not None
    assert check.latency_s >= 0
    assert check.native_tool_calls is True
    assert check.tool_reply is None
    assert (check.context_window, check.context_window_source) == (8192, "server")
    assert check.error is None
    plain, with_tool = posts
    assert "tools" not in plain
    assert [t["function"]["name"] for t in with_tool["tools"]] == [PROBE_TOOL.name]
    # the check's own settings win; the profile's other settings still apply
    assert (plain["temperature"], plain["top_k"]) == (0.0, 9)


async def test_tool_calls_written_as_text_are_not_native() -> None:
    leaked = '<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>'
    with FakeOpenAIServer([FakeReply.text("ready"), FakeReply.text(leaked)]) as server:
        check = await check_profile(profile_for(server))
    assert check.ok
    assert check.native_tool_calls is False
    assert check.tool_reply == leaked


async def test_a_server_that_refuses_tools_is_reachable_without_native_calls() -> None:
    refusal = FakeReply.error(500, "tools param requires --jinja flag")
    with FakeOpenAIServer([FakeReply.text("ready"), refusal]) as server:
        check = await check_profile(profile_for(server, max_retries=3))
    assert check.ok
    assert check.native_tool_calls is False
    assert check.tool_reply is not None
    assert "--jinja" in check.tool_reply


async def test_an_unreachable_server_is_reported_not_raised() -> None:
    profile = ModelProfile(name="gone", base_url=f"http://127.0.0.1:{closed_port()}/v1")
    check = await check_profile(profile)
    assert (check.reachable, check.answered, check.ok) == (False, False, False)
    assert check.error is not None
    assert "could not connect" in check.error
    assert check.native_tool_calls is None
    assert check.latency_s is None


async def test_a_server_that_answers_with_an_error_is_reachable_but_not_ok() -> None:
    with FakeOpenAIServer([FakeReply.error(401, "bad key", type="invalid_api_key")]) as server:
        check = await check_profile(profile_for(server))
    assert (check.reachable, check.answered) == (True, False)
    assert check.error is not None
    assert "401" in check.error


async def test_the_profile_window_wins_and_the_server_window_is_reported() -> None:
    with FakeOpenAIServer(ANSWERS, model_info={"max_model_len": 4096}) as server:
        check = await check_profile(profile_for(server, context_window=32768))
    assert (check.context_window, check.context_window_source) == (32768, "profile")
    assert check.server_context_window == 4096


@pytest.mark.parametrize(
    ("props", "model_info", "window"),
    [
        ({"default_generation_settings": {"n_ctx": 65536}}, {}, 65536),  # llama.cpp
        ({"n_ctx": 2048}, {}, 2048),  # older llama.cpp
        (None, {"max_model_len": 32768}, 32768),  # vLLM
        (None, {"context_length": 131072}, 131072),  # OpenRouter, LM Studio
        (None, {}, None),
        ({"default_generation_settings": {"n_ctx": "big"}}, {"max_model_len": True}, None),
    ],
)
async def test_the_server_window_comes_from_props_or_the_model_listing(
    props: dict[str, object] | None, model_info: dict[str, object], window: int | None
) -> None:
    with FakeOpenAIServer(props=props, model_info=model_info) as server:
        assert await server_context_window(profile_for(server)) == window


async def test_hosted_apis_are_not_asked_for_a_window() -> None:
    assert await server_context_window(ModelProfile(name="openai", model="gpt-4.1")) is None
    claude = ModelProfile(name="c", provider="anthropic", model="claude", base_url="http://x")
    assert await server_context_window(claude) is None


async def test_the_api_key_never_follows_a_redirect(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that redirects /props elsewhere gets no answer from us, and its target no key."""
    seen: list[str | None] = []

    class Target(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization"))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"n_ctx": 4096}')

        def log_message(self, *args: object) -> None:
            pass

    target = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Target)

    class Redirecting(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{target.server_port}/props")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    source = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    for server in (target, source):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("PROBE_KEY", "sk-secret")
    profile = ModelProfile(
        name="p", base_url=f"http://127.0.0.1:{source.server_port}/v1", api_key_env="PROBE_KEY"
    )
    try:
        assert await server_context_window(profile) is None
    finally:
        for server in (target, source):
            server.shutdown()
            server.server_close()
    assert seen == []
