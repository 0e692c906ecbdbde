"""`tool_calls = "auto"` over a server with native tools: calls the model wrote as text run.

Every model here is built from a profile by `build_model` and talks HTTP to a
`FakeOpenAIServer` on 127.0.0.1 that answers with `content` and no `tool_calls`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from gateway.conftest import collect, final_response
from harness.agent import AgentLoop, AgentSpec
from harness.core import Limits, Message
from harness.core.events import ModelResponded, TextToolCalls, payloads
from harness.core.messages import MALFORMED_TOOL_CALL
from harness.gateway.model import Model, ModelRequest, ModelResponse, TextDelta, close_model
from harness.gateway.profiles import ModelProfile, build_model
from harness.gateway.textcalls.malformed import malformed_call_feedback
from harness.gateway.textcalls.rescue import mask_code
from harness.runtime.bus import EventBus, RunRecorder
from harness.testing.fake_openai import FakeOpenAIServer, FakeReply
from harness.tools import Toolset, tool


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOLS = Toolset([add])
CALL = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def model_for(
    server: FakeOpenAIServer, *, name: str = "Qwen2.5-7B-Instruct", tool_calls: str = "auto"
) -> Model:
    profile = ModelProfile(
        name="box", model=name, base_url=server.base_url, tool_calls=tool_calls, max_retries=0
    )
    return build_model(profile)


def ask(*, tools: bool = True) -> ModelRequest:
    return ModelRequest(
        messages=(Message.user("2+3?"),), tools=TOOLS.definitions() if tools else ()
    )


async def reply(
    server: FakeOpenAIServer, text: str, *, stream: bool, tools: bool = True, **model: str
) -> tuple[ModelResponse, str]:
    """The response to `text` served as content, and the answer text that streamed."""
    server.add(FakeReply.text(text))
    built = model_for(server, **model)
    try:
        if not stream:
            response = await built.request(ask(tools=tools))
            return response, response.message.content or ""
        events = await collect(built, ask(tools=tools))
    finally:
        await close_model(built)
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    return final_response(events), shown


@pytest.mark.parametrize("stream", [False, True])
async def test_a_call_written_as_text_runs_and_its_markup_never_shows(
    server: FakeOpenAIServer, stream: bool
) -> None:
    response, shown = await reply(server, f"Let me add.\n{CALL}", stream=stream)
    (call,) = response.message.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("add", {"a": 2, "b": 3})
    assert response.message.content == shown == "Let me add."
    assert response.finish_reason == "tool_calls"
    assert response.tool_calls_from_text == "hermes"
    sent = server.requests[0].body
    assert [t["function"]["name"] for t in sent["tools"]] == ["add"]
    assert "<tool_call>" not in json.dumps(sent["messages"])  # no text-mode instructions


@pytest.mark.parametrize("stream", [False, True])
async def test_native_mode_turns_the_rescue_off(server: FakeOpenAIServer, stream: bool) -> None:
    response, shown = await reply(server, CALL, stream=stream, tool_calls="native")
    assert response.message.tool_calls == ()
    assert response.message.content == shown == CALL
    assert response.tool_calls_from_text is None


@pytest.mark.parametrize("stream", [False, True])
async def test_a_turn_without_tools_is_not_read(server: FakeOpenAIServer, stream: bool) -> None:
    response, shown = await reply(server, f"<think>x</think>{CALL}", stream=stream, tools=False)
    assert response.message.tool_calls == ()
    assert response.message.content == shown == f"<think>x</think>{CALL}"


@pytest.mark.parametrize("stream", [False, True])
async def test_native_calls_are_kept_and_markup_beside_them_stays_text(
    server: FakeOpenAIServer, stream: bool
) -> None:
    server.add(FakeReply.tool_call("add", {"a": 1, "b": 1}, id="n1", content=f"See:{CALL}"))
    built = model_for(server)
    if stream:
        events = await collect(built, ask())
        response = final_response(events)
        shown = "".join(e.text for e in events if isinstance(e, TextDelta))
        assert shown == response.message.content
    else:
        response = await built.request(ask())
    await close_model(built)
    assert [(c.id, c.name) for c in response.message.tool_calls] == [("n1", "add")]
    assert response.message.content == f"See:{CALL}"
    assert response.tool_calls_from_text is None


@pytest.mark.parametrize("stream", [False, True])
async def test_reasoning_tags_in_the_text_are_split_off(
    server: FakeOpenAIServer, stream: bool
) -> None:
    response, shown = await reply(server, f"<think>Add them.</think>\n{CALL}", stream=stream)
    assert response.message.reasoning == "Add them."
    assert response.message.content is None
    assert shown == ""
    assert [c.name for c in response.message.tool_calls] == ["add"]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_cut_off_call_is_not_run_and_the_model_is_shown_the_form(
    server: FakeOpenAIServer, stream: bool
) -> None:
    response, _ = await reply(
        server, '<tool_call>{"name": "add", "arguments": {"a": 2', stream=stream
    )
    (call,) = response.message.tool_calls
    assert call.name == MALFORMED_TOOL_CALL
    feedback = malformed_call_feedback(call.arguments)
    assert "it was cut off" in feedback
    assert '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 1}}\n</tool_call>' in feedback
    assert response.tool_calls_from_text == "hermes"


PROSE = {
    "json-object": 'The config is {"name": "demo", "version": 2}, as asked.',
    "json-answer": '{"name": "Ada", "arguments": ["x", "y"]}',
    "json-answer-with-parameters": '{"city": "Paris", "parameters": {"unit": "C"}}',
    "fenced-json-call": (
        'A call looks like this:\n```json\n{"name": "add", "parameters": {"a": 1, "b": 2}}\n```'
    ),
    "fenced-hermes-call": f"Qwen writes calls like this:\n```\n{CALL}\n```\nThat is all.",
    "inline-tag": "Wrap each call in `<tool_call>` tags, e.g. `<tool_call>{...}</tool_call>`.",
    "bare-tags": "Qwen puts each call between <tool_call> and </tool_call> tags.",
    "mistral-marker": "Mistral starts calls with [TOOL_CALLS] and a JSON list.",
    "call-list-answer": "[1, 2, 3] are the numbers; [see(below)] for more.",
    "unknown-name-call-list": "[greet(name='Ada')]",
}
"""Final answers that mention or show call syntax without calling anything."""


@pytest.mark.parametrize("family", ["Qwen2.5-7B-Instruct", "Llama-3.1-8B-Instruct", "local"])
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("text", list(PROSE.values()), ids=list(PROSE))
async def test_prose_that_shows_call_syntax_is_an_answer(
    server: FakeOpenAIServer, text: str, stream: bool, family: str
) -> None:
    response, shown = await reply(server, text, stream=stream, name=family)
    assert response.message.tool_calls == ()
    assert response.message.content == shown == text
    assert response.finish_reason == "stop"
    assert response.tool_calls_from_text is None


def test_mask_code_blanks_fences_and_spans_and_keeps_the_length() -> None:
    text = "a `b` c\n```py\nx = 1\n```\nd ``e`f`` g\n```\nopen"
    masked = mask_code(text)
    assert len(masked) == len(text)
    assert masked.split() == ["a", "c", "d", "g"]


@pytest.mark.parametrize("stream", [False, True])
async def test_an_agent_runs_a_tool_the_model_called_in_text(
    server: FakeOpenAIServer, stream: bool
) -> None:
    server.add(FakeReply.text(f"I will add.\n{CALL}"), FakeReply.text("The sum is 5."))
    model = model_for(server)
    spec = AgentSpec(name="t", model=model, limits=Limits())
    recorder = RunRecorder("run_t", EventBus())
    loop = AgentLoop(spec, model=model, toolset=TOOLS, sink=recorder, stream=stream)
    result = await loop.run("run_t", [Message.system("sys"), Message.user("2+3?")])
    await close_model(model)
    assert result.output == "The sum is 5."
    assert [m.content for m in result.messages if m.role == "tool"] == ["5"]
    responded = payloads(recorder.events, ModelResponded)
    assert [p.tool_calls_from_text for p in responded] == [
        TextToolCalls(format="hermes", calls=1, malformed=0),
        None,
    ]
    second = server.requests[1].body["messages"]
    assert second[2]["tool_calls"][0]["function"]["name"] == "add"  # sent back natively
    assert second[3] == {
        "role": "tool",
        "tool_call_id": second[2]["tool_calls"][0]["id"],
        "content": "5",
    }
