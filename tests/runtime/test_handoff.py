"""Handoffs in the durable runtime: a triage agent hands the conversation to billing."""

import json
import sys
from pathlib import Path

import pytest

from harness import Agent, Harness, Limits, Message, ModelRequest, tool
from harness.core.events import Handoff, RunStarted, StepStarted, ToolCompleted, payloads
from harness.errors import ConfigError
from harness.runtime import Settings
from harness.testing import FunctionModel, ScriptedModel, call, reply

sys.path.insert(0, str(Path(__file__).parent / "processes"))
import kill_agents
from owner_process import OwnerProcess

TASK = "I was charged twice for order 42."
TRIAGE_PROMPT = "You are triage. Route the customer to the right team."
BILLING_PROMPT = "You are billing. Resolve charges and refunds."


@tool(side_effects="none")
def refund_status(order: int) -> str:
    """Look up the refund status of an order."""
    return f"order {order}: refund pending"


@tool(side_effects="mutating")
def escalate(note: str) -> str:
    """Escalate to a human (not safe to repeat)."""
    return "escalated"


def billing(model: ScriptedModel, **fields: object) -> Agent:
    return Agent(
        name="billing",
        description="Charges, refunds and invoices.",
        instructions=BILLING_PROMPT,
        model=model,
        tools=[refund_status],
        **fields,  # type: ignore[arg-type]
    )


def triage(model: ScriptedModel, target: Agent | str, **fields: object) -> Agent:
    return Agent(
        name="triage",
        instructions=TRIAGE_PROMPT,
        model=model,
        tools=[escalate],
        handoffs=[target],
        **fields,  # type: ignore[arg-type]
    )


def transfer(reason: str | None = "a double charge", *, id: str = "h1") -> Message:
    arguments = {} if reason is None else {"reason": reason}
    return reply(None, call("transfer_to_billing", arguments, id=id))


async def test_triage_hands_over_and_billing_answers(tmp_path: Path) -> None:
    first = ScriptedModel([transfer()])
    second = ScriptedModel(
        [reply(None, call("refund_status", {"order": 42}, id="r1")), "Refund is pending."]
    )
    agent = triage(first, billing(second))
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, TASK)
        record = await h.get(result.run_id)
        events = [e async for e in h.events(result.run_id)]
        stored = await h.messages(result.run_id)
    assert result.output == "Refund is pending."
    assert record.agent == "billing"
    assert record.model == "scripted"
    assert record.metadata["handoffs"] == 1
    [handoff] = payloads(events, Handoff)
    assert handoff == Handoff(
        step=1,
        call_id="h1",
        from_agent="triage",
        to_agent="billing",
        reason="a double charge",
        count=1,
    )
    started = payloads(events, RunStarted)
    assert [(p.agent, p.tools) for p in started] == [
        ("triage", ("escalate", "read_result", "transfer_to_billing")),
        ("billing", ("refund_status", "read_result")),
    ]
    # The triage model saw its tools and the handoff tool, described by billing.
    offered = {t.name: t for t in first.requests[0].tools}
    assert offered["transfer_to_billing"].description.startswith(
        "Hand the conversation over to the billing agent: Charges, refunds and invoices."
    )
    # Billing's first request: its own instructions, then the conversation as it was.
    sent = second.requests[0].messages
    assert [(m.role, m.content) for m in sent] == [
        ("system", BILLING_PROMPT),
        ("user", TASK),
        ("assistant", None),
        (
            "tool",
            "Handed the conversation over to the billing agent, which continues from here.",
        ),
    ]
    assert [c.id for c in sent[2].tool_calls] == ["h1"]
    assert "transfer_to_billing" not in {t.name for t in second.requests[0].tools}
    # The store keeps the handoff's system message where it was written.
    assert [m.role for m in stored] == [
        "system",
        "user",
        "assistant",
        "tool",
        "system",
        "assistant",
        "tool",
        "assistant",
    ]
    assert stored[4].content == BILLING_PROMPT
    # Steps and usage carried on in the same run.
    assert result.usage.requests == 3
    assert [p.call_id for p in payloads(events, ToolCompleted) if p.ok] == ["h1", "r1"]


async def test_a_run_killed_after_its_handoff_goes_on_as_the_new_agent(
    tmp_path: Path, store_target: str
) -> None:
    with OwnerProcess(tmp_path, store_target, "triage", TASK) as first:
        run_id = first.run_id
        assert run_id is not None
        assert first.line() == "in billing"  # the handoff committed; billing's model waits
        first.kill()
    billing_model = FunctionModel(lambda request: reply("Refund issued."))
    triage_model = FunctionModel(lambda request: reply("triage again"))
    billing_agent = Agent(
        name="billing", instructions=kill_agents.BILLING_PROMPT, model=billing_model
    )
    agent = kill_agents.triage(billing_agent, triage_model)
    async with Harness(Settings(home=tmp_path), store=store_target, agents=(agent,)) as h:
        result = await h.wait(run_id, timeout=30)
        record = await h.get(run_id)
        events = [e async for e in h.events(run_id)]
        costs = await h.store.list_runs(agent="billing")
    assert result.output == "Refund issued."
    assert record.agent == "billing"
    assert [r.run_id for r in costs] == [run_id]
    assert triage_model.requests == []  # the taken-over run never went back to triage
    assert [e.type for e in events if e.type in ("handoff", "run_recovered", "run_started")] == [
        "run_started",
        "handoff",  # billing's own run_started had not committed when the process died
        "run_recovered",
        "run_started",
    ]
    assert [p.agent for p in payloads(events, RunStarted)] == ["triage", "billing"]
    [sent] = [r.messages for r in billing_model.requests]
    assert [(m.role, m.content) for m in sent] == [
        ("system", kill_agents.BILLING_PROMPT),
        ("user", TASK),
        ("assistant", None),
        (
            "tool",
            "Handed the conversation over to the billing agent, which continues from here.",
        ),
    ]
    assert len(payloads(events, Handoff)) == 1


ESCALATIONS: list[str] = []


@tool(side_effects="mutating")
def escalate_logged(note: str) -> str:
    """Escalate to a human (logged, not safe to repeat)."""
    ESCALATIONS.append(note)
    return "escalated"


def tool_texts(messages: "list[Message] | tuple[Message, ...]") -> dict[str, str]:
    return {m.tool_call_id or "": m.content or "" for m in messages if m.role == "tool"}


async def test_a_handoff_to_an_unknown_agent_is_a_tool_error_and_the_agent_goes_on(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        [
            reply(
                None,
                call("transfer_to_nobody", {}, id="h1"),
                call("escalate_logged", {"note": "x"}, id="e1"),
            ),
            "I will handle it myself.",
        ]
    )
    agent = Agent(name="triage", model=model, tools=[escalate_logged], handoffs=["nobody"])
    ESCALATIONS.clear()
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, TASK)
        record = await h.get(result.run_id)
        events = [e async for e in h.events(result.run_id)]
    assert result.output == "I will handle it myself."
    assert record.agent == "triage"
    assert "handoffs" not in record.metadata
    assert payloads(events, Handoff) == []
    texts = tool_texts(result.messages)
    assert texts["h1"].startswith("The handoff to nobody was refused: no agent named 'nobody'")
    assert texts["e1"].startswith("This call was not run: a step that calls transfer_to_nobody")
    assert ESCALATIONS == []  # the other call of the handoff step never ran
    completed = {p.call_id: p.status for p in payloads(events, ToolCompleted)}
    assert completed == {"h1": "tool_error", "e1": "not_run"}
    # The unknown target's tool has a description of its own.
    [offered] = [t for t in model.requests[0].tools if t.name == "transfer_to_nobody"]
    assert offered.description.startswith("Hand the conversation over to the nobody agent.")


async def test_only_the_first_handoff_of_a_step_counts_and_nothing_else_runs(
    tmp_path: Path,
) -> None:
    first = ScriptedModel(
        [
            reply(
                None,
                call("escalate_logged", {"note": "x"}, id="e1"),
                call("transfer_to_billing", {"reason": "charge"}, id="h1"),
                call("transfer_to_billing", {"reason": "again"}, id="h2"),
            )
        ]
    )
    second = ScriptedModel(["Done by billing."])
    agent = Agent(name="triage", model=first, tools=[escalate_logged], handoffs=[billing(second)])
    ESCALATIONS.clear()
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, TASK)
        events = [e async for e in h.events(result.run_id)]
    assert result.output == "Done by billing."
    assert ESCALATIONS == []
    [handoff] = payloads(events, Handoff)
    assert (handoff.call_id, handoff.reason) == ("h1", "charge")
    texts = tool_texts(result.messages)
    assert texts["h1"].startswith("Handed the conversation over to the billing agent")
    for other in ("e1", "h2"):
        assert texts[other].startswith(
            "This call was not run: in the same step the conversation was handed over to "
            "the billing agent"
        )
    # Every call of the assistant message is answered, in the conversation billing got.
    assert set(tool_texts(second.requests[0].messages)) == {"e1", "h1", "h2"}


async def test_bad_arguments_of_a_handoff_call_are_a_tool_error(tmp_path: Path) -> None:
    first = ScriptedModel(
        [reply(None, call("transfer_to_billing", {"reason": 5}, id="h1")), "Fine, me then."]
    )
    agent = triage(first, billing(ScriptedModel([])))
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, TASK)
        record = await h.get(result.run_id)
    assert result.output == "Fine, me then."
    assert record.agent == "triage"
    text = tool_texts(result.messages)["h1"]
    assert text.startswith("The arguments for tool 'transfer_to_billing' do not match")
    assert "$.reason: 5 is not of type 'string'" in text


async def test_handoffs_go_back_and_forth_until_the_limit(tmp_path: Path) -> None:
    """Triage → billing → triage → refused (max_handoffs=2): the system prompt follows."""
    limits = Limits(max_handoffs=2)
    triage_model = ScriptedModel(
        [
            transfer(id="h1"),
            reply(None, call("transfer_to_billing", {}, id="h3")),
            "Triage finishes.",
        ]
    )
    billing_model = ScriptedModel([reply(None, call("transfer_to_triage", {}, id="h2"))])
    billing_agent = billing(billing_model, handoffs=["triage"], limits=limits)
    agent = triage(triage_model, billing_agent, limits=limits)
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, TASK)
        record = await h.get(result.run_id)
        events = [e async for e in h.events(result.run_id)]
        stored = await h.messages(result.run_id)
    assert result.output == "Triage finishes."
    assert record.agent == "triage"
    assert record.metadata["handoffs"] == 2
    assert [(p.from_agent, p.to_agent, p.count) for p in payloads(events, Handoff)] == [
        ("triage", "billing", 1),
        ("billing", "triage", 2),
    ]
    assert tool_texts(result.messages)["h3"].startswith(
        "The handoff to billing was refused: this run was already handed over 2 times, "
        "its limit (max_handoffs=2)."
    )
    # Back at triage: its own prompt first, the whole conversation after it.
    back = triage_model.requests[1].messages
    assert [(m.role, m.content) for m in back][:2] == [("system", TRIAGE_PROMPT), ("user", TASK)]
    assert [m.role for m in back[2:]] == ["assistant", "tool", "assistant", "tool"]
    assert [m.content for m in stored if m.role == "system"] == [
        TRIAGE_PROMPT,
        BILLING_PROMPT,
        TRIAGE_PROMPT,
    ]
    assert result.usage.requests == 4  # the run's one usage, across its agents
    assert [m.role for m in result.messages].count("system") == 1


def test_an_agent_cannot_list_itself_or_a_target_twice() -> None:
    with pytest.raises(ConfigError, match="lists itself in handoffs"):
        Agent(name="triage", handoffs=["triage"])
    with pytest.raises(ConfigError, match="both make the tool 'transfer_to_billing'"):
        Agent(name="triage", handoffs=["billing", Agent(name="billing")])


async def test_agents_of_harness_toml_hand_over_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file's agents: `handoffs = ["billing"]`; the target runs as it is defined (the
    task type's limits were chosen for triage), over a real HTTP model."""
    from harness.runtime._explain import explain
    from harness.runtime.settings import load_settings
    from harness.testing import FakeOpenAIServer, FakeReply

    for name in ("HARNESS_MODEL", "HARNESS_STORE"):
        monkeypatch.delenv(name, raising=False)
    replies = [
        FakeReply.tool_call("transfer_to_billing", {"reason": "refund"}, id="h1"),
        FakeReply.text("Refunded."),
    ]
    with FakeOpenAIServer(replies) as server:
        (tmp_path / "harness.toml").write_text(
            f'[agents.triage]\nmodel = "openai:m"\nbase_url = "{server.base_url}"\n'
            f'instructions = "{TRIAGE_PROMPT}"\nhandoffs = ["billing"]\n'
            f'[agents.billing]\nmodel = "openai:m"\nbase_url = "{server.base_url}"\n'
            f'instructions = "{BILLING_PROMPT}"\ndescription = "Charges and refunds."\n'
            '[task_types.support]\nagent = "triage"\nlimits = { max_steps = 3 }\n'
        )
        async with Harness(load_settings(tmp_path), store=str(tmp_path / "h.db")) as h:
            run_id = await h.submit(None, TASK, task_type="support")
            result = await h.wait(run_id, timeout=60)
            record = await h.get(run_id)
            events = await h.store.events(run_id)
        bodies = [r.body for r in server.requests]
        shown = {s.key: s for s in explain(load_settings(tmp_path), agent="triage")}
    assert (shown["handoffs"].value, shown["handoffs"].source) == (
        ["billing"],
        "agents.triage.handoffs",
    )
    assert result.output == "Refunded."
    assert record.agent == "billing"
    assert record.task_type == "support"  # the run keeps its label
    assert [(p.agent, p.max_steps) for p in payloads(events, RunStarted)] == [
        ("triage", 3),
        ("billing", 25),
    ]
    [tool_def] = [t for t in bodies[0]["tools"] if t["function"]["name"] == "transfer_to_billing"]
    assert "billing agent: Charges and refunds." in tool_def["function"]["description"]
    assert [m["role"] for m in bodies[1]["messages"]] == ["system", "user", "assistant", "tool"]
    assert bodies[1]["messages"][0]["content"] == BILLING_PROMPT
    assert "tools" not in bodies[1] or all(
        t["function"]["name"] != "transfer_to_billing" for t in bodies[1]["tools"]
    )


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('handoffs = ["triage"]', "key 'agents.triage.handoffs': agent 'triage' cannot hand"),
        ('handoffs = ["b", "b"]', "key 'agents.triage.handoffs'"),
        ('handoffs = [""]', "key 'agents.triage.handoffs'"),
    ],
)
def test_bad_handoffs_in_harness_toml_name_the_key(
    tmp_path: Path, table: str, problem: str
) -> None:
    from harness.runtime.settings import load_settings

    (tmp_path / "harness.toml").write_text(f"[agents.triage]\n{table}\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path)
    assert problem in str(caught.value)


async def test_a_handoff_whose_step_never_committed_is_answered_on_resume(
    tmp_path: Path,
) -> None:
    """The history ends with a handoff call and no result (its process stopped before the
    handoff step committed): the call is answered, and the same agent goes on."""
    model = ScriptedModel(["Still triage."])
    agent = triage(model, billing(ScriptedModel([])))
    history = [Message.system(TRIAGE_PROMPT), Message.user(TASK), transfer()]
    async with Harness(Settings(home=tmp_path)) as h:
        run_id = await h.submit(agent, TASK, history=history)
        result = await h.wait(run_id, timeout=30)
        record = await h.get(run_id)
    assert result.output == "Still triage."
    assert record.agent == "triage"
    assert tool_texts(model.requests[0].messages)["h1"] == (
        "This handoff did not take effect: the process running the run stopped before it "
        "was recorded. Call transfer_to_billing again if you still want to hand over."
    )


async def test_the_target_brings_its_output_type_and_limits_and_the_steps_carry_on(
    tmp_path: Path,
) -> None:
    from pydantic import BaseModel

    class Refund(BaseModel):
        order: int
        amount: float

    first = ScriptedModel([reply(None, call("escalate", {"note": "n"}, id="e1")), transfer()])
    second = ScriptedModel(['{"order": 42, "amount": 9.5}'])
    target = billing(second, output_type=Refund, limits=Limits(max_steps=3))
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(triage(first, target), TASK)
        stored = await h.wait(result.run_id)  # read back as another process would
        events = [e async for e in h.events(result.run_id)]
    assert result.data == Refund(order=42, amount=9.5)
    assert stored.data == Refund(order=42, amount=9.5)
    assert second.requests[0].messages[0].content == target.system_prompt  # with its schema
    assert [p.max_steps for p in payloads(events, RunStarted)] == [25, 3]
    assert max(p.step for p in payloads(events, StepStarted)) == 3  # step 3 of the one run

    # Steps carry on: a target with max_steps=2 after two steps stops at once and reports.
    first = ScriptedModel([reply(None, call("escalate", {"note": "n"}, id="e1")), transfer()])
    second = ScriptedModel(["Report: nothing done yet."])
    target = billing(second, limits=Limits(max_steps=2))
    async with Harness(Settings(home=tmp_path)) as h:
        stopped = await h.run(triage(first, target), TASK)
    assert stopped.termination == "max_steps"
    assert stopped.output == "Report: nothing done yet."
    assert second.requests[0].tools == ()  # the wrap-up turn offers no tools


async def test_a_plan_and_execute_agent_hands_over_mid_plan(tmp_path: Path) -> None:
    def planner(request: ModelRequest) -> Message | str:
        if (request.messages[-1].content or "").startswith("Make a plan"):
            return json.dumps({"steps": [{"description": "route the customer"}]})
        return transfer()

    target = billing(ScriptedModel(["Billing answers."]))
    agent = Agent(
        name="triage",
        model=FunctionModel(planner),
        strategy="plan_execute",
        handoffs=[target],
    )
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, TASK)
        events = [e async for e in h.events(result.run_id)]
    assert result.output == "Billing answers."
    assert [(p.agent, p.strategy) for p in payloads(events, RunStarted)] == [
        ("triage", "plan_execute"),
        ("billing", "react"),
    ]
