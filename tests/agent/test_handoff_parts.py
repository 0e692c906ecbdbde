"""The pieces of a handoff that need no runtime: names, tools offered, carried histories."""

import pytest

from harness import Agent
from harness.agent.handoff import HandoffTools, carried, handoff_tool_name
from harness.core.messages import Message
from harness.errors import ConfigError
from harness.runtime.runs import agent_from_metadata, agent_metadata
from harness.testing import call, reply


def test_a_tool_name_holds_only_what_tool_names_may() -> None:
    assert handoff_tool_name("billing") == "transfer_to_billing"
    assert handoff_tool_name("EU billing.v2") == "transfer_to_EU_billing_v2"
    with pytest.raises(ConfigError, match="over 64 characters"):
        Agent(name="a", handoffs=["x" * 60])


def test_the_tools_offered_are_one_tuple_per_toolset_tuple() -> None:
    agent = Agent(name="triage", handoffs=["billing", Agent(name="legal", description="Law.")])
    tools = HandoffTools(agent, describe=lambda name: f"about {name}")
    base = ()
    offered = tools.offered(base)
    assert tools.offered(base) is offered  # the token estimate is kept by identity
    assert [t.name for t in offered] == ["transfer_to_billing", "transfer_to_legal"]
    assert "billing agent: about billing" in offered[0].description
    assert "legal agent: Law." in offered[1].description
    assert offered[0].parameters["properties"]["reason"]["type"] == "string"
    assert tools.target("transfer_to_legal") == "legal"
    assert tools.target("bash") is None
    calls = (
        call("bash", {}),
        call("transfer_to_legal", {}, id="b"),
        call("transfer_to_billing", {}),
    )
    first = tools.first_call(calls)
    assert first is not None
    assert first.id == "b"


def test_a_stored_history_is_carried_with_the_latest_system_message_first() -> None:
    plain = [Message.system("a"), Message.user("task")]
    assert carried(plain) is plain
    stored = [
        Message.system("triage"),
        Message.user("task"),
        reply(None, call("transfer_to_billing", {}, id="h1")),
        Message.tool("h1", "handed over"),
        Message.system("billing"),
        reply("done"),
    ]
    assert [(m.role, m.content) for m in carried(stored)] == [
        ("system", "billing"),
        ("user", "task"),
        ("assistant", None),
        ("tool", "handed over"),
        ("assistant", "done"),
    ]


def test_an_agent_with_handoffs_by_name_travels_and_one_with_objects_does_not() -> None:
    agent = Agent(name="triage", model="local", description="Routes.", handoffs=["billing"])
    data = agent_metadata(agent)
    assert data is not None
    back = agent_from_metadata(data)
    assert (back.description, tuple(back.handoffs)) == ("Routes.", ("billing",))
    assert "handoffs" not in (agent_metadata(Agent(name="plain", model="local")) or {})
    assert agent_metadata(Agent(name="t", model="local", handoffs=[Agent(name="b")])) is None
