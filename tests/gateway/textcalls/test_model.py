"""`TextToolCallModel` around a scripted model that only reads and writes text."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from harness.agent import AgentLoop, AgentSpec
from harness.core import Limits, Message
from harness.core.events import ModelResponded, TextToolCalls, payloads
from harness.core.messages import ToolCall
from harness.errors import ConfigError
from harness.gateway import FunctionModel, ModelRequest, ModelSettings, ScriptedModel
from harness.gateway.model import ReasoningDelta, ResponseDone, StreamEvent, TextDelta
from harness.gateway.textcalls import MALFORMED_TOOL_CALL, TextToolCallModel
from harness.runtime.bus import EventBus, RunRecorder
from harness.tools import Toolset, tool


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOLS = Toolset([add])


def ask(*messages: Message, settings: ModelSettings | None = None) -> ModelRequest:
    return ModelRequest(
        messages=(Message.system("Be brief."), Message.user("2+3?"), *messages),
        tools=TOOLS.definitions(),
        settings=settings or ModelSettings(),
    )


async def collect(model: TextToolCallModel, request: ModelRequest) -> list[StreamEvent]:
    return [event async for event in model.stream(request)]


async def test_the_inner_model_gets_instructions_and_no_native_tools() -> None:
    inner = ScriptedModel(['<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>'])
    model = TextToolCallModel(inner, format="hermes")
    response = await model.request(ask(settings=ModelSettings(parallel_tool_calls=True)))
    sent = inner.requests[0]
    assert sent.tools == ()
    assert sent.settings.parallel_tool_calls is None
    system = sent.messages[0]
    assert system.role == "system"
    assert system.content is not None
    assert system.content.startswith("Be brief.\n\n# Tools")
    assert json.dumps(TOOLS.definitions()[0].parameters) in system.content
    assert "inside its own <tool_call></tool_call> block" in system.content
    assert '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 1}}\n</tool_call>' in (
        system.content
    )
    (call,) = response.message.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("add", {"a": 2, "b": 3})
    assert response.message.content is None
    assert response.finish_reason == "tool_calls"
    assert response.tool_calls_from_text == "hermes"


async def test_a_reply_without_calls_says_none_came_from_text() -> None:
    response = await TextToolCallModel(ScriptedModel(["5"]), format="hermes").request(ask())
    assert response.tool_calls_from_text is None


async def test_a_request_without_a_system_prompt_gets_one() -> None:
    inner = ScriptedModel(["4"])
    model = TextToolCallModel(inner, format="hermes")
    await model.request(ModelRequest(messages=(Message.user("2+2?"),), tools=TOOLS.definitions()))
    assert [m.role for m in inner.requests[0].messages] == ["system", "user"]


async def test_one_call_per_reply_when_parallel_calls_are_off() -> None:
    inner = ScriptedModel(["ok"])
    await TextToolCallModel(inner, format="hermes").request(
        ask(settings=ModelSettings(parallel_tool_calls=False))
    )
    assert "Call at most one tool per reply." in (inner.requests[0].messages[0].content or "")


async def test_the_history_is_written_as_text() -> None:
    inner = ScriptedModel(["5"])
    model = TextToolCallModel(inner, format="hermes")
    history = (
        Message.assistant(
            "Adding.",
            [
                ToolCall(id="c1", name="add", arguments='{"a": 2, "b": 3}'),
                ToolCall(id="c2", name="add", arguments='{"a": 1, "b": 1}'),
            ],
        ),
        Message.tool("c1", "5", name="add"),
        Message.tool("c2", "2", name="add"),
    )
    response = await model.request(ask(*history))
    sent = inner.requests[0].messages
    assert [m.role for m in sent] == ["system", "user", "assistant", "user"]
    assert all(not m.tool_calls and m.tool_call_id is None for m in sent)
    assert sent[2].content == (
        "Adding.\n\n"
        '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>\n'
        '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 1}}\n</tool_call>'
    )
    assert (
        sent[3].content
        == "<tool_response>\n5\n</tool_response>\n<tool_response>\n2\n</tool_response>"
    )
    assert response.message.content == "5"
    assert response.finish_reason == "stop"


@pytest.mark.parametrize(
    ("format", "call_text", "result_text"),
    [
        (
            "mistral_v13",
            '[TOOL_CALLS]add[CALL_ID]c1[ARGS]{"a": 2, "b": 3}',
            '<tool_result name="add" id="c1">',
        ),
        ("qwen3_coder", "<function=add>\n<parameter=a>\n2\n</parameter>", "<tool_response>\n5\n"),
        (
            "harmony",
            "<|start|>assistant to=functions.add<|channel|>commentary",
            '<tool_result name="add"',
        ),
        ("pythonic", "[add(a=2, b=3)]", '<tool_result name="add" id="c1">\n5\n</tool_result>'),
    ],
)
async def test_each_format_writes_the_history_in_its_own_form(
    format: str, call_text: str, result_text: str
) -> None:
    inner = ScriptedModel(["5"])
    history = (
        Message.assistant(None, [ToolCall(id="c1", name="add", arguments='{"a": 2, "b": 3}')]),
        Message.tool("c1", "5", name="add"),
    )
    await TextToolCallModel(inner, format=format).request(ask(*history))
    sent = inner.requests[0].messages
    assert call_text in (sent[2].content or "")
    assert result_text in (sent[3].content or "")


async def test_auto_writes_the_family_format_taken_from_the_inner_models_name() -> None:
    inner = ScriptedModel(["<|channel|>final<|message|>Five."], name="gpt-oss-20b")
    model = TextToolCallModel(inner)
    response = await model.request(ask())
    assert "to=functions.NAME" in (inner.requests[0].messages[0].content or "")
    assert response.message.content == "Five."
    assert model.name == "gpt-oss-20b"


async def test_auto_reads_whatever_format_the_model_wrote() -> None:
    inner = ScriptedModel(['[TOOL_CALLS]add{"a": 1, "b": 2}'], name="mystery-model")
    response = await TextToolCallModel(inner).request(ask())
    assert [c.name for c in response.message.tool_calls] == ["add"]


async def test_reasoning_is_split_and_calls_inside_it_never_run() -> None:
    text = (
        '<think>Maybe <tool_call>{"name": "add", "arguments": {"a": 9, "b": 9}}</tool_call></think>'
        '<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>'
    )
    inner = ScriptedModel([Message.assistant(text, reasoning="From the server.")])
    response = await TextToolCallModel(inner, format="hermes").request(ask())
    message = response.message
    assert [json.loads(c.arguments) for c in message.tool_calls] == [{"a": 2, "b": 3}]
    assert message.reasoning is not None
    assert message.reasoning.startswith("From the server.\n\nMaybe <tool_call>")


async def test_thinking_forced_open_is_passed_to_the_parser() -> None:
    inner = ScriptedModel(["plan</think>Five."])
    model = TextToolCallModel(inner, format="hermes", thinking_forced_open=True)
    message = (await model.request(ask())).message
    assert (message.reasoning, message.content) == ("plan", "Five.")


async def test_model_ids_that_are_already_in_the_history_are_replaced() -> None:
    reply = '[TOOL_CALLS][{"name": "add", "arguments": {"a": 1, "b": 1}, "id": "c1"}]'
    inner = ScriptedModel([reply, reply])
    model = TextToolCallModel(inner, format="mistral")
    first = (await model.request(ask())).message.tool_calls[0]
    assert first.id == "c1"
    history = (Message.assistant(None, [first]), Message.tool("c1", "2", name="add"))
    second = (await model.request(ask(*history))).message.tool_calls[0]
    assert second.id != "c1"


async def test_a_turn_without_tools_runs_no_calls_and_adds_no_instructions() -> None:
    inner = ScriptedModel(['Report: done.<tool_call>{"name": "add", "arguments": {}}</tool_call>'])
    request = ModelRequest(messages=(Message.user("Report."),))
    response = await TextToolCallModel(inner, format="hermes").request(request)
    assert [m.role for m in inner.requests[0].messages] == ["user"]
    assert response.message.tool_calls == ()
    assert response.message.content == "Report: done."


async def test_a_malformed_call_is_told_to_the_model_through_the_toolset() -> None:
    inner = ScriptedModel(['Adding.<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}'])
    model = TextToolCallModel(inner, format="hermes")
    message = (await model.request(ask())).message
    (call,) = message.tool_calls
    assert call.name == MALFORMED_TOOL_CALL
    assert message.content == "Adding."
    outcome = await TOOLS.execute(call, limits=Limits())
    assert outcome.status == "invalid_json"
    text = outcome.message.content or ""
    assert text.startswith("Your tool call could not be read (it was cut off), so nothing was run")
    assert "the JSON ends before it is complete" in text
    assert 'You wrote: <tool_call>{"name": "add"' in text
    assert '{"name": "add", "arguments": {"a": 1, "b": 1}}' in text  # how to write it
    assert TOOLS.check(call, limits=Limits()) is not None


async def test_the_malformed_call_is_shown_back_as_the_model_wrote_it() -> None:
    broken = '<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}</tool_call>'
    inner = ScriptedModel([broken, "ok"])
    model = TextToolCallModel(inner, format="hermes")
    message = (await model.request(ask())).message
    outcome = await TOOLS.execute(message.tool_calls[0], limits=Limits())
    await model.request(ask(message, outcome.message))
    sent = inner.requests[1].messages
    assert sent[2].content == broken
    assert (sent[3].content or "").startswith("<tool_response>\nYour tool call could not be read")


async def test_an_unknown_format_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="unknown tool-call format"):
        TextToolCallModel(ScriptedModel([]), format="xml")


# Streaming.


async def test_streaming_releases_the_answer_early_and_ends_with_the_parsed_message() -> None:
    call = '<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>'
    text = f"Let me add these numbers for you.{call}"
    inner = ScriptedModel([text])  # streams its text in 16-character pieces
    events = await collect(TextToolCallModel(inner, format="hermes"), ask())
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert deltas[0] == "Let me add these"  # before the rest had arrived
    assert "".join(deltas) == "Let me add these numbers for you."
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.message.content == "Let me add these numbers for you."
    assert [c.name for c in done.response.message.tool_calls] == ["add"]
    assert done.response.finish_reason == "tool_calls"


async def test_streamed_reasoning_from_the_server_and_from_the_text_adds_up() -> None:
    inner = ScriptedModel([Message.assistant("<think>mine</think>Five.", reasoning="server's")])
    events = await collect(TextToolCallModel(inner, format="hermes"), ask())
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert reasoning == done.response.message.reasoning == "server's\n\nmine"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Five."


async def test_streaming_and_request_give_the_same_message() -> None:
    text = '<think>hm</think>Sure.[TOOL_CALLS]add{"a": 1, "b": 2}[TOOL_CALLS]add{"a": 3}'
    model = TextToolCallModel(FunctionModel(lambda _request: text), format="mistral_v11")
    whole = (await model.request(ask())).message
    done = (await collect(model, ask()))[-1]
    assert isinstance(done, ResponseDone)
    streamed = done.response.message
    assert (streamed.content, streamed.reasoning) == (whole.content, whole.reasoning)
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [
        (c.name, c.arguments) for c in whole.tool_calls
    ]


# The agent loop, end to end.


@pytest.mark.parametrize("stream", [False, True])
async def test_an_agent_runs_tools_through_text_calls(stream: bool) -> None:
    inner = ScriptedModel(
        [
            'I will add.\n<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>',
            "<tool_call>{oops}</tool_call>",
            "The sum is 5.",
        ]
    )
    model = TextToolCallModel(inner, format="hermes")
    spec = AgentSpec(name="t", model=model, limits=Limits())
    recorder = RunRecorder("run_t", EventBus())
    loop = AgentLoop(spec, model=model, toolset=TOOLS, sink=recorder, stream=stream)  # type: ignore[arg-type]
    result = await loop.run("run_t", [Message.system("sys"), Message.user("2+3?")])
    assert result.output == "The sum is 5."
    tool_messages = [m for m in result.messages if m.role == "tool"]
    assert [m.content for m in tool_messages][:1] == ["5"]
    assert "could not be read" in (tool_messages[1].content or "")
    assert len(tool_messages) == 2
    third = inner.requests[2].messages
    assert all(m.role in ("system", "user", "assistant") for m in third)
    assert third[3].content == "<tool_response>\n5\n</tool_response>"
    assert third[4].content == "<tool_call>{oops}</tool_call>"
    responded = payloads(recorder.events, ModelResponded)
    assert [p.tool_calls_from_text for p in responded] == [
        TextToolCalls(format="hermes", calls=1, malformed=0),
        TextToolCalls(format="hermes", calls=0, malformed=1),
        None,
    ]


class _EndlessText:
    """A model whose stream never ends; it notes when its stream is closed."""

    name = "endless"

    def __init__(self) -> None:
        self.closed = False

    async def request(self, request: ModelRequest) -> object:
        raise AssertionError("streams only")

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        try:
            while True:
                yield TextDelta(text="word ")
        finally:
            self.closed = True


async def test_a_stream_left_early_closes_the_inner_stream() -> None:
    inner = _EndlessText()
    model = TextToolCallModel(inner, format="hermes")  # type: ignore[arg-type]
    events = model.stream(ModelRequest(messages=(Message.user("hi"),)))
    async for event in events:
        assert isinstance(event, TextDelta)
        break
    await events.aclose()  # type: ignore[attr-defined]
    assert inner.closed
