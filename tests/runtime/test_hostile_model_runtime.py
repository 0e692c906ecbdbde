"""A model that writes hostile text: durable runs on SQLite keep going and store everything."""

from pathlib import Path

from harness import Agent, Harness, tool
from harness.core import ToolCall
from harness.runtime import Settings
from harness.testing import ScriptedModel, call, reply

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
