"""Every raw tool-call case served as a native-mode reply: `content` with no `tool_calls`.

A real OpenAI-compatible server on 127.0.0.1 (`FakeOpenAIServer`) answers a request that
carries the tools natively; `TextCallRescueModel` (what `tool_calls = "auto"` adds over a
server with native tools) must read the calls out of the text, whole and streamed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.conftest import collect, final_response
from harness.core.messages import MALFORMED_TOOL_CALL, Message, ToolDefinition
from harness.gateway.model import ModelRequest, ModelResponse, ReasoningDelta, TextDelta
from harness.gateway.providers.openai import OpenAIModel
from harness.gateway.textcalls import MalformedCall, TextParse
from harness.gateway.textcalls.malformed import malformed_call_feedback, malformed_text
from harness.gateway.textcalls.rescue import TextCallRescueModel
from harness.testing.fake_openai import FakeOpenAIServer, FakeReply

from .corpus import FAMILIES, Case, assert_case, is_snapshot, load_cases, params, tools

CASES = load_cases()

NEEDS_FAMILY = "llama3-json-with-surrounding-text"
"""Prose before a bare JSON call: only the Llama family reads it as a call."""

PROSE_IN_NATIVE_MODE = {
    "llama3-json-invalid-json": "broken JSON naming no offered tool, with no call marker",
    "pythonic-unrecoverable-block": "a list that is not Python, with no call marker",
}
"""Cases text mode reports as malformed, which a native-mode reply keeps as its answer:
without a marker, only markup naming an offered tool counts as a call."""


def offered(case: Case) -> tuple[ToolDefinition, ...]:
    """The case's tools; else one per expected call (the model calls what it was offered)."""
    listed = tools(case)
    if listed:
        return listed
    names = sorted({call["name"] for call in case["expected"]}) or ["noop"]
    return tuple(ToolDefinition(name=name, description="A tool.") for name in names)


def sse_reply(text: str, size: int) -> FakeReply:
    """`text` streamed as content deltas of `size` characters, with no tool calls."""
    envelope = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m"}

    def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + json.dumps({**envelope, "choices": [choice]}).encode() + b"\n\n"

    pieces = [event({"role": "assistant", "content": ""})]
    pieces += [event({"content": text[i : i + size]}) for i in range(0, len(text), size)]
    pieces += [event({}, "stop"), b"data: [DONE]\n\n"]
    return FakeReply.raw(200, {"content-type": "text/event-stream"}, pieces)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


async def answer(
    server: FakeOpenAIServer, case: Case, *, stream: int | None, family: str | None = None
) -> ModelResponse:
    """The case's text served natively; `stream` is the delta size, `None` for no stream."""
    server.add(sse_reply(case["text"], stream) if stream else FakeReply.text(case["text"]))
    forced_open = bool(case.get("context", {}).get("thinking_forced_open", False))
    async with OpenAIModel("m", base_url=server.base_url) as inner:
        model = TextCallRescueModel(
            inner,
            family=family or FAMILIES[case["format"]],
            thinking_forced_open=forced_open,
        )
        request = ModelRequest(messages=(Message.user("Go."),), tools=offered(case))
        if not stream:
            return await model.request(request)
        events = await collect(model, request)
    response = final_response(events)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert (text, reasoning) == (response.message.content or "", response.message.reasoning or "")
    assert server.requests[-1].body["tools"]  # the tools still went out natively
    return response


def as_parse(response: ModelResponse) -> TextParse:
    """The response in the shape the corpus checks read."""
    calls = response.message.tool_calls
    return TextParse(
        content=response.message.content,
        reasoning=response.message.reasoning,
        calls=tuple(c for c in calls if c.name != MALFORMED_TOOL_CALL),
        malformed=tuple(
            MalformedCall(text=malformed_text(c.arguments), problem=c.arguments)
            for c in calls
            if c.name == MALFORMED_TOOL_CALL
        ),
        format=response.tool_calls_from_text or "plain",
    )


def assert_rescued(response: ModelResponse, case: Case) -> None:
    """The corpus's expectations, as a reply to a turn offering the tools."""
    parsed = as_parse(response)
    if case["id"] in PROSE_IN_NATIVE_MODE:
        assert response.message.tool_calls == ()
        assert parsed.content == case["text"]
        assert response.tool_calls_from_text is None
        return
    if is_snapshot(case):  # a whole reply that stops inside its call: the model is told
        assert parsed.calls == ()
        (malformed,) = response.message.tool_calls
        assert "it was cut off" in malformed_call_feedback(malformed.arguments)
        assert response.tool_calls_from_text == case["format"]
        return
    assert_case(parsed, case)
    calls = response.message.tool_calls
    assert response.finish_reason == ("tool_calls" if calls else "stop")
    assert response.tool_calls_from_text == (parsed.format if calls else None)
    for call in calls:
        if call.name == MALFORMED_TOOL_CALL:
            assert "Write the call again in exactly this form" in (
                malformed_call_feedback(call.arguments)
            )


@pytest.mark.parametrize("stream", [None, 1, 5], ids=["whole", "stream1", "stream5"])
@pytest.mark.parametrize("case", params(CASES))
async def test_each_case_as_a_native_reply(
    server: FakeOpenAIServer, case: Case, stream: int | None
) -> None:
    assert_rescued(await answer(server, case, stream=stream), case)


@pytest.mark.parametrize("case", params([c for c in CASES if c["id"] != NEEDS_FAMILY]))
async def test_a_model_of_no_known_family_is_read_from_the_text(
    server: FakeOpenAIServer, case: Case
) -> None:
    assert_rescued(await answer(server, case, stream=None, family="local"), case)


@pytest.mark.parametrize("stream", [None, 4])
async def test_prose_around_a_bare_json_call_runs_only_for_the_llama_family(
    server: FakeOpenAIServer, stream: int | None
) -> None:
    (case,) = [c for c in CASES if c["id"] == NEEDS_FAMILY]
    plain = await answer(server, case, stream=stream, family="local")
    assert plain.message.tool_calls == ()
    assert plain.message.content == case["text"]
    llama = await answer(server, case, stream=stream, family="Llama-3.3-70B-Instruct")
    assert [c.name for c in llama.message.tool_calls] == ["getOpenIncidentsTool"]
    assert llama.tool_calls_from_text == "llama3_json"
