"""A model that writes hostile text: durable runs on SQLite keep going and store everything."""

from pathlib import Path

import pytest

from harness import Agent, Harness, tool
from harness.core import ToolCall
from harness.gateway.providers.anthropic import AnthropicModel
from harness.gateway.providers.openai import OpenAIModel
from harness.runtime import Settings
from harness.testing import FakeOpenAIServer, FakeReply, ScriptedModel, call, reply
from harness.testing.fake_anthropic import FakeAnthropicServer

DEEP = '{"a":' * 999 + "1" + "}" * 999
SCHEMA = {"title": "anything", "type": "object"}


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_deep_arguments_and_a_deep_answer_are_refused_and_stored(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            reply(None, ToolCall(id="deep", name="add", arguments="[" * 999)),
            reply(DEEP),  # a structured answer nested past the bound: repaired
            reply(None, call("add", {"a": 1, "b": 2})),
            reply('{"sum": 3}'),
        ]
    )
    agent = Agent(name="deep", model=model, tools=[add], output_type=SCHEMA)
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, "add")
        stored = await h.messages(result.run_id)
    assert (result.termination, result.data) == ("final_answer", {"sum": 3})
    assert stored == list(result.messages)
    told = [m.content or "" for m in stored if m.role in ("tool", "user")]
    assert "nested 999 levels deep" in told[1]
    assert "the answer: nested 999 levels deep" in told[2]


LONE = "\ud800"
BAD = "\ufffd"
SEEN: list[str] = []


@tool(side_effects="none")
def echo(text: str) -> str:
    """Say the text back."""
    SEEN.append(text)
    return f"echo {text}"


@pytest.mark.parametrize("stream", [False, True], ids=["request", "stream"])
async def test_lone_surrogates_from_a_server_run_durably_on_sqlite(
    tmp_path: Path, stream: bool
) -> None:
    SEEN.clear()
    script = [
        FakeReply(
            content=f"looking {LONE}",
            reasoning=f"hmm {LONE}",
            calls=(
                ToolCall(id="c1", name="echo", arguments='{"text": "a' + LONE + '"}'),
                ToolCall(id="c2", name="echo", arguments='{"text": "b\\ud800"}'),
                ToolCall(id="c3", name=f"echo{LONE}", arguments="{}"),
            ),
            finish_reason="tool_calls",
        ),
        FakeReply.text(f"done {LONE}"),
    ]
    with FakeOpenAIServer(script) as server:
        model = OpenAIModel("m", base_url=server.base_url)
        agent = Agent(name="hostile", model=model, tools=[echo])
        async with Harness(Settings(home=tmp_path)) as h:
            result = await h.run(agent, "go", stream=stream)
            stored = await h.messages(result.run_id)
            events = [e async for e in h.events(result.run_id)]
        await model.aclose()
    assert (result.termination, result.output) == ("final_answer", f"done {BAD}")
    assert stored == list(result.messages)
    assert SEEN == [f"a{BAD}", f"b{BAD}"]
    statuses = [e.payload.status for e in events if e.type == "tool_completed"]
    assert statuses == ["ok", "ok", "unknown_tool"]
    assistant = stored[2]
    assert (assistant.content, assistant.reasoning) == (f"looking {BAD}", f"hmm {BAD}")


async def test_a_models_own_lone_surrogates_are_replaced_before_the_store(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        [reply(f"thinking {LONE}", call("add", {"a": 1, "b": 2})), reply(f"3 {LONE}")]
    )
    agent = Agent(name="own", model=model, tools=[add])
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, "add")
        stored = await h.messages(result.run_id)
    assert (result.termination, result.output) == ("final_answer", f"3 {BAD}")
    assert stored[2].content == f"thinking {BAD}"


@tool(side_effects="none")
def garbled() -> str:
    """Return text with a lone surrogate, as a tool reading a broken file might."""
    return f"bytes {LONE} here"


async def test_a_tools_lone_surrogate_is_replaced_before_the_store(tmp_path: Path) -> None:
    model = ScriptedModel([reply(None, call("garbled", {})), reply("read it")])
    agent = Agent(name="garbled", model=model, tools=[garbled])
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, "read")
        stored = await h.messages(result.run_id)
    assert (result.termination, result.output) == ("final_answer", "read it")
    assert stored[3].content == f"bytes {BAD} here"


async def test_a_server_error_quoting_a_lone_surrogate_fails_the_run_cleanly(
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer([FakeReply.error(400, f"bad {LONE} input")]) as server:
        model = OpenAIModel("m", base_url=server.base_url)
        async with Harness(Settings(home=tmp_path)) as h:
            result = await h.run(Agent(name="refused", model=model), "go")
            events = [e async for e in h.events(result.run_id)]
        await model.aclose()
    assert result.termination == "error"
    assert f"bad {BAD} input" in (result.error or "")
    assert events[-1].type == "run_failed"
    assert f"bad {BAD} input" in events[-1].payload.error


async def test_deep_arguments_go_back_to_anthropic_as_text_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    script = [
        FakeReply(calls=(ToolCall(id="c1", name="add", arguments="[" * 999),)),
        FakeReply.text("done"),
    ]
    with FakeAnthropicServer(script) as server:
        model = AnthropicModel("m", base_url=server.base_url, api_key="k")
        async with Harness(Settings(home=tmp_path)) as h:
            result = await h.run(Agent(name="deep", model=model, tools=[add]), "go", stream=True)
        await model.aclose()
        replayed = server.requests[1].body["messages"][1]["content"][0]
    assert (result.termination, result.output) == ("final_answer", "done")
    assert replayed["input"] == {"raw_arguments": "[" * 999}
