"""A run's usage is counted once, by the agent loop: what the store keeps is exactly what
the run's events add up to, across a compaction, a pause and resume, and a takeover."""

from __future__ import annotations

import asyncio
from pathlib import Path

from harness import Agent, Harness, Message, ModelRequest, ModelResponse, ToolCall, Usage, tool
from harness.core import RunEvent
from harness.core.events import (
    ContextCompacted,
    ModelCalled,
    ModelResponded,
    RunStarted,
    RunSubmitted,
    StepStarted,
    ToolCallRef,
    ToolCompleted,
    ToolStarted,
    payloads,
)
from harness.memory import ContextPolicy
from harness.runtime import Settings
from harness.store import NewEvent, NewRun, RunUpdate, StepWrite, open_store
from harness.testing import FunctionModel

COST = 0.125
"""Dollars per model call: a binary fraction, so that sums are exact in any order."""


@tool(side_effects="none")
def lookup(city: str) -> str:
    """Look up a city."""
    return f"{city}: " + "details " * 120


def added_up(events: list[RunEvent]) -> Usage:
    """Every model response and summary request, and every tool call that ran, once."""
    total = Usage()
    for event in events:
        match event.payload:
            case ModelResponded(usage=usage) | ContextCompacted(usage=usage):
                total += usage
            case ToolCompleted(status=status) if status != "not_run":
                total += Usage(tool_calls=1)
            case _:
                pass
    return total


def looker(calls: int, latency_s: float = 0.0) -> FunctionModel:
    """Looks up `calls` cities, one per step, then answers; summarizes when asked."""

    asked: list[str] = []

    def act(request: ModelRequest) -> ModelResponse:
        first = request.messages[0].content or ""
        if "summar" in first.lower():
            message = Message.assistant("SUMMARY: cities looked up.")
        elif len(asked) >= calls or not request.tools:
            message = Message.assistant("done")
        else:
            asked.append(f"c{len(asked)}")
            arguments = f'{{"city": "City {len(asked)}"}}'
            message = Message.assistant(
                None, [ToolCall(id=asked[-1], name="lookup", arguments=arguments)]
            )
        size = sum(len(m.content or "") for m in request.messages) // 4
        usage = Usage(input_tokens=size, output_tokens=7, requests=1, cost_usd=COST)
        finish = "tool_calls" if message.tool_calls else "stop"
        return ModelResponse(message=message, finish_reason=finish, usage=usage)

    return FunctionModel(act, latency_s=latency_s)


POLICY = ContextPolicy(context_window=2000, trim_at=0.5, summarize_at=0.5, keep_last_turns=1)


async def test_the_stored_usage_is_the_sum_of_the_events_with_compactions(
    tmp_path: Path,
) -> None:
    model = looker(8)
    agent = Agent(name="counted", model=model, tools=[lookup], context=POLICY)
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, "Look up cities.")
        events = await h.store.events(result.run_id)
        record = await h.get(result.run_id)
    summaries = [c for c in payloads(events, ContextCompacted) if c.usage.requests]
    assert summaries  # a summary request was paid for, and counts
    assert record.usage == added_up(events) == result.usage
    assert record.usage.requests == len(model.requests)
    assert record.usage.tool_calls == 8
    assert record.usage.cost_usd == COST * len(model.requests)


async def test_a_paused_and_resumed_run_counts_each_call_once(tmp_path: Path) -> None:
    model = looker(4, latency_s=0.2)
    agent = Agent(name="paused", model=model, tools=[lookup])
    async with Harness(Settings(home=tmp_path)) as h:
        run_id = await h.submit(agent, "Look up cities.")
        while len(model.requests) < 2:
            await asyncio.sleep(0.01)
        await h.pause(run_id)
        while (await h.get(run_id)).state != "PAUSED":
            await asyncio.sleep(0.01)
        paused = await h.get(run_id)
        assert paused.usage == added_up(await h.store.events(run_id))
        await h.resume(run_id)
        result = await h.wait(run_id, timeout=30)
        events = await h.store.events(run_id)
        record = await h.get(run_id)
    assert [e.type for e in events].count("run_paused") == 1
    assert record.usage == added_up(events) == result.usage
    assert record.usage.requests == len(model.requests) == 5
    assert record.usage.tool_calls == 4


async def test_a_run_taken_over_from_a_dead_owner_counts_its_calls_and_the_rerun_once(
    tmp_path: Path,
) -> None:
    before = Usage(input_tokens=40, output_tokens=7, requests=1, cost_usd=COST)
    call = ToolCall(id="c0", name="lookup", arguments='{"city": "City 0"}')
    events = [
        RunSubmitted(agent="adopted", task="Look up cities.", parent_run_id=None),
        RunStarted(agent="adopted", model="function", tools=("lookup",), max_steps=25),
        StepStarted(step=1),
        ModelCalled(step=1, model="function", messages=2, tools=1, stream=False, request_id="r"),
        ModelResponded(
            step=1,
            finish_reason="tool_calls",
            content="",
            usage=before,
            tool_calls=(ToolCallRef(id="c0", name="lookup"),),
            duration_s=0.01,
        ),
        ToolStarted(step=1, call_id="c0", tool="lookup", arguments=call.arguments),
    ]  # it died while the call ran: the new owner runs it again (it has no side effects)
    messages = [
        Message.system("s"),
        Message.user("Look up cities."),
        Message.assistant(None, [call]),
    ]
    async with await open_store(tmp_path / "harness.db") as store:
        dead = NewRun(
            run_id="run_adopted",
            agent="adopted",
            task="t",
            state="RUNNING",
            owner="gone:1",
            lease_s=60,
        )
        await store.create_run(dead, events=[NewEvent(payload=p) for p in events[:1]])
        await store.append(  # what the dead owner committed, with the usage it had counted
            StepWrite(
                run_id="run_adopted",
                events=[NewEvent(payload=p) for p in events[1:]],
                messages=messages,
                update=RunUpdate(usage=before),
                owner="gone:1",
            )
        )
        await store.release("gone:1", ["run_adopted"])
    model = looker(3)
    agent = Agent(name="adopted", model=model, tools=[lookup])
    async with Harness(Settings(home=tmp_path), agents=(agent,)) as h:
        result = await h.wait("run_adopted", timeout=30)
        stored = await h.store.events("run_adopted")
        record = await h.get("run_adopted")
    assert "run_recovered" in [e.type for e in stored]
    assert record.usage == added_up(stored) == result.usage
    assert record.usage.requests == 1 + len(model.requests)
    assert record.usage.tool_calls == 1 + 3
