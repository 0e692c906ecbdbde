"""Agents as tools: child runs in the same store, waited for durably, rolled up, bounded.

The tests that kill a worker live in `test_children_chaos.py`.
"""

import asyncio
import json
import sys
from pathlib import Path

import pytest

from harness import Agent, Harness
from harness.core.events import ChildFinished, ChildStarted, RunPaused, payloads
from harness.core.states import RunState
from harness.core.usage import Usage
from harness.runtime import Settings
from harness.runtime.child_limits import ChildLimits
from harness.runtime.children import child_run_id
from harness.testing import ScriptedModel, call, reply

sys.path.insert(0, str(Path(__file__).parent / "processes"))
import tree_agents
from tree_agents import (
    RESEARCHER_REPLY_USD,
    SUPERVISOR_REPLY_USD,
    researcher,
    structured_researcher,
    supervisor,
)


async def test_a_fan_out_runs_children_in_the_same_store_and_gathers_their_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tree_agents, "LEDGER", tmp_path / "ledger")
    async with Harness(Settings(home=tmp_path)) as h:
        boss = supervisor()
        result = await h.run(boss, "survey")
        parent = await h.get(result.run_id)
        children = await h.store.list_runs(parent_run_id=result.run_id, limit=None)
        events = [e async for e in h.events(result.run_id)]
    assert result.output == " | ".join(f"found survey/topic-{i}" for i in range(10))
    assert sorted(c.run_id for c in children) == sorted(
        child_run_id(result.run_id, f"fan-{i}") for i in range(10)
    )
    assert {(c.state, c.depth, c.root_run_id, c.agent) for c in children} == {
        (RunState.COMPLETED, 1, result.run_id, "researcher")
    }
    assert (parent.depth, parent.parent_run_id, parent.root) == (0, None, result.run_id)
    started = payloads(events, ChildStarted)
    finished = payloads(events, ChildFinished)
    assert sorted(s.call_id for s in started) == sorted(f"fan-{i}" for i in range(10))
    assert not any(s.existed for s in started)
    assert {f.state for f in finished} == {"COMPLETED"}
    assert sorted((tmp_path / "ledger").read_text().splitlines()) == sorted(
        f"survey/topic-{i}" for i in range(10)
    )
    # Roll-up: its own usage is its own two replies; its children's is theirs, counted once.
    assert parent.usage.cost_usd == 2 * SUPERVISOR_REPLY_USD
    assert parent.children_usage.cost_usd == 10 * 2 * RESEARCHER_REPLY_USD
    assert parent.children_usage.requests == 20
    assert parent.total_usage.cost_usd == sum(c.usage.cost_usd for c in (parent, *children))


async def test_the_children_of_one_step_run_at_the_same_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tree_agents, "LEDGER", tmp_path / "ledger")
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(supervisor(), "survey")
        children = await h.store.list_runs(parent_run_id=result.run_id, limit=None)
    # Each child takes two model calls of 50 ms: one after another, ten would take a
    # second at least; together they all start before the first of them ends.
    first_end = min(c.finished_at or 0 for c in children)
    assert all(c.started_at is not None and c.started_at < first_end for c in children)


async def test_a_child_with_an_output_type_answers_with_its_json(tmp_path: Path) -> None:
    analyst = structured_researcher()
    boss = Agent(
        name="boss",
        model=ScriptedModel(
            [reply(None, call("analyst", {"task": "tides"}, id="c1")), reply("ok")]
        ),
        tools=[analyst.as_tool()],
    )
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(boss, "go")
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert json.loads(tool_message.content or "") == {"topic": "tides", "score": 7}


async def test_a_failed_child_is_a_tool_error_for_its_parent(tmp_path: Path) -> None:
    broken = Agent(name="broken", model=ScriptedModel([]))  # fails at its first request
    boss = Agent(
        name="boss",
        model=ScriptedModel([reply(None, call("broken", {"task": "x"}, id="c1")), reply("ok")]),
        tools=[broken.as_tool()],
    )
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(boss, "go")
        child = await h.get(child_run_id(result.run_id, "c1"))
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert child.state == RunState.FAILED
    assert f"child run {child.run_id} (broken) failed" in (tool_message.content or "")


async def test_depth_and_children_limits_refuse_with_a_tool_error(tmp_path: Path) -> None:
    leaf = Agent(name="leaf", model=ScriptedModel([reply("leaf done")] * 5))
    middle = Agent(
        name="middle",
        model=ScriptedModel([reply(None, call("leaf", {"task": "x"}, id="m1")), reply("mid")]),
        tools=[leaf.as_tool()],
    )
    top = Agent(
        name="top",
        model=ScriptedModel(
            [
                reply(None, call("middle", {"task": "a"}, id="t1")),
                reply(
                    None,
                    call("leaf", {"task": "b"}, id="t2"),
                    call("leaf", {"task": "c"}, id="t3"),
                ),
                reply("top done"),
            ]
        ),
        tools=[middle.as_tool(), leaf.as_tool()],
    )
    limits = ChildLimits(max_depth=1, max_children=2)
    async with Harness(Settings(home=tmp_path), child_limits=limits) as h:
        result = await h.run(top, "go")
        tree = await h.store.list_runs(root_run_id=result.run_id, limit=None)
        middle_run = await h.get(child_run_id(result.run_id, "t1"))
        middle_messages = await h.messages(middle_run.run_id)
    answers = {m.tool_call_id: m.content or "" for m in result.messages if m.role == "tool"}
    assert "mid" in answers["t1"]
    # t2 and t3 run side by side: whichever asks second is the third child, refused
    leaves = sorted(answers[call_id] for call_id in ("t2", "t3"))
    assert "max_children" in leaves[0]
    assert "this run started 2 already" in leaves[0]
    assert leaves[1] == "leaf done"
    refused = next(m.content or "" for m in middle_messages if m.role == "tool")
    assert "at most 1 deep (max_depth)" in refused
    assert len(tree) == 2  # the middle and one leaf: nothing was made for the refusals


async def test_usage_counts_once_in_harness_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.observability.cost import read_cost

    monkeypatch.setattr(tree_agents, "LEDGER", tmp_path / "ledger")
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(supervisor(), "survey")
        parent = await h.get(result.run_id)
        report = await read_cost(h.store, by=("agent",))
    by_agent = {line.key["agent"]: line for line in report.lines}
    assert by_agent["supervisor"].usd == 2 * SUPERVISOR_REPLY_USD
    assert by_agent["researcher"].usd == 20 * RESEARCHER_REPLY_USD
    assert by_agent["researcher"].runs == 10
    assert report.total.usd == parent.total_usage.cost_usd
    assert report.total.requests == parent.total_usage.requests == 22
    assert parent.total_usage == parent.usage + parent.children_usage
    assert isinstance(parent.children_usage, Usage)


async def test_a_run_with_child_events_renders_and_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli.render import LiveRenderer
    from harness.observability.stored import trace_of
    from harness.runtime.harness import stored_context

    monkeypatch.setattr(tree_agents, "LEDGER", tmp_path / "ledger")
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(supervisor(), "survey")
        events = await h.store.events(result.run_id)
        record = await h.get(result.run_id)
    render = LiveRenderer()
    for event in events:
        render(event)
    shown = capsys.readouterr().out
    first = child_run_id(result.run_id, "fan-0")
    assert f"↳ child {first} researcher" in shown
    assert f"↲ child {first} completed" in shown
    spans = trace_of(result.run_id, events, stored_context(record))
    assert sum(s.span.name.startswith("execute_tool") for s in spans) == 10


async def test_a_child_past_the_calls_timeout_is_cancelled_and_the_call_fails(
    tmp_path: Path,
) -> None:
    slow = Agent(name="slow", model=ScriptedModel([reply("late")], latency_s=30))
    boss = Agent(
        name="boss",
        model=ScriptedModel([reply(None, call("slow", {"task": "x"}, id="c1")), reply("ok")]),
        tools=[slow.as_tool(timeout=2)],
    )
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(boss, "go", timeout=30)
        child = await h.wait(child_run_id(result.run_id, "c1"), timeout=10)
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert "did not finish within 2 s and was cancelled" in (tool_message.content or "")
    assert child.termination == "cancelled"


async def test_an_agent_tool_outside_the_runtime_is_a_clear_tool_error() -> None:
    from harness.core.messages import ToolCall
    from harness.core.usage import Limits
    from harness.tools import Toolset

    spec = researcher().as_tool(name="ask_researcher")
    assert spec.parameters["required"] == ["task"]
    toolset = Toolset([spec])
    call_ = ToolCall(id="c1", name="ask_researcher", arguments='{"task": "x"}')
    outcome = await toolset.execute(call_, limits=Limits())
    assert outcome.status == "tool_error"
    assert "needs harness's runtime" in outcome.output
    bad = await toolset.execute(
        ToolCall(id="c2", name="ask_researcher", arguments='{"task": "x", "more": 1}'),
        limits=Limits(),
    )
    assert bad.status == "invalid_arguments"


async def test_park_awaits_what_it_is_given() -> None:
    from harness.tools import ToolContext

    async def answer() -> int:
        return 42

    assert await ToolContext().park("waiting for nothing", answer()) == 42


async def test_a_pause_asked_before_the_fan_out_pauses_the_parent_as_it_starts_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tree_agents, "LEDGER", tmp_path / "ledger")
    monkeypatch.setattr(tree_agents, "LATENCY_S", 0.5)
    async with Harness(Settings(home=tmp_path), control_poll_s=0.05) as h:
        root = await h.submit(supervisor(), "survey")
        await asyncio.sleep(0.2)  # in its first model call: no child exists yet
        await h.pause(root)
        async with asyncio.timeout(30):
            while (await h.get(root)).state != RunState.PAUSED:
                await asyncio.sleep(0.05)
        events = await h.store.events(root)
        await h.resume(root)
        result = await h.wait(root, timeout=60)
        children = await h.store.list_runs(parent_run_id=root, limit=None)
    assert [p.at for p in payloads(events, RunPaused)] == ["wait"]
    assert result.output == " | ".join(f"found survey/topic-{i}" for i in range(10))
    assert len(children) == 10
    assert sorted((tmp_path / "ledger").read_text().splitlines()) == sorted(
        f"survey/topic-{i}" for i in range(10)
    )
