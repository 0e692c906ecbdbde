"""The tool attribution of `read_cost` on runs written event by event into a real store.

Each run here is written as the runtime writes one (messages with their token counts,
and the events of each step), with round numbers, so that every expected dollar is
arithmetic on this page.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from harness.core import Message, ToolCall, Usage
from harness.core.events import (
    ContextCompacted,
    Handoff,
    ModelCalled,
    ModelFallback,
    ModelResponded,
    RunSubmitted,
    ToolCallRef,
    ToolCompleted,
)
from harness.core.usage import Prices
from harness.observability.cost import read_cost
from harness.store import EventStore, NewEvent, NewRun, StepWrite, open_store
from harness.store.protocol import RunUpdate

M = 1_000_000
PAID = Prices(input=2.0, output=8.0, cached_input=0.5)
CHEAP = Prices(input=1.0, output=1.0)


@pytest.fixture
async def store(store_target: str) -> AsyncIterator[EventStore]:
    opened = await open_store(store_target)
    try:
        yield opened
    finally:
        await opened.close()


def usage(input: int, output: int = 0, cached: int = 0, cost: float = 0.0) -> Usage:
    return Usage(
        input_tokens=input, output_tokens=output, cached_tokens=cached, requests=1, cost_usd=cost
    )


def called(request_id: str, model: str = "stack") -> NewEvent:
    payload = ModelCalled(step=1, model=model, messages=2, stream=False, request_id=request_id)
    return NewEvent(payload=payload)


def responded(
    model: str | None, prices: Prices | None, used: Usage, *calls: tuple[str, str]
) -> NewEvent:
    payload = ModelResponded(
        step=1,
        finish_reason="tool_calls" if calls else "stop",
        content="",
        usage=used,
        tool_calls=tuple(ToolCallRef(id=i, name=n) for i, n in calls),
        duration_s=0.1,
        model=model,
        prices=prices,
    )
    return NewEvent(payload=payload)


def completed(call_id: str, tool: str, seconds: float) -> NewEvent:
    payload = ToolCompleted(
        step=1,
        call_id=call_id,
        tool=tool,
        status="ok",
        ok=True,
        result="…",
        truncated=False,
        duration_s=seconds,
    )
    return NewEvent(payload=payload)


def asks(*calls: tuple[str, str]) -> Message:
    return Message.assistant(None, tuple(ToolCall(id=i, name=n, arguments="{}") for i, n in calls))


def result(call_id: str, tool: str, tokens: int) -> Message:
    return Message(role="tool", content="…", tool_call_id=call_id, name=tool, tokens=tokens)


async def write_run(
    store: EventStore, run_id: str, steps: list[tuple[list[NewEvent], list[Message]]], **run: Any
) -> None:
    head = [Message.system("be brief"), Message.user("find it")]
    await store.create_run(NewRun(run_id=run_id, agent="ops", model="stack", **run), messages=head)
    for events, messages in steps:
        await store.append(StepWrite(run_id=run_id, events=events, messages=messages))
    await store.transition(run_id, ["PENDING"], "COMPLETED")


async def test_a_compaction_stops_a_result_being_charged_to_its_tool(store: EventStore) -> None:
    # History: 0 system, 1 task, 2 asks lookup, 3 lookup's result (300 tokens),
    # 4 asks search, 5 search's result (500 tokens), 6 the answer.
    # The compaction before the third request stops sending history before index 4.
    first = usage(100, cost=100 * 2.0 / M)
    second = usage(600, cached=300, cost=(300 * 2.0 + 300 * 0.5) / M)
    third = usage(700, output=10, cost=(700 * 2.0 + 10 * 8.0) / M)
    summary = usage(50, output=10, cost=(50 * 2.0 + 10 * 8.0) / M)
    compacted = NewEvent(
        payload=ContextCompacted(
            step=3,
            tier="summarize",
            tokens_before=900,
            tokens_after=400,
            messages_removed=2,
            messages_cut=0,
            summary="looked it up",
            fallback=None,
            usage=summary,
            state={"history_index": 4},
            model="paid",
            prices=PAID,
        )
    )
    await write_run(
        store,
        "run_1",
        [
            (
                [called("r1"), responded("paid", PAID, first, ("a1", "lookup"))],
                [asks(("a1", "lookup"))],
            ),
            ([completed("a1", "lookup", 0.5)], [result("a1", "lookup", 300)]),
            (
                [called("r2"), responded("paid", PAID, second, ("b1", "search"))],
                [asks(("b1", "search"))],
            ),
            ([completed("b1", "search", 1.5)], [result("b1", "search", 500)]),
            (
                [compacted, called("r3"), responded("paid", PAID, third)],
                [Message.assistant("found")],
            ),
        ],
    )
    tools = {line.key["tool"]: line for line in (await read_cost(store, by=["tool"])).lines}

    lookup = tools["lookup"]
    # Carried by the second request only: half of its input was cached, so a token costs
    # half at $2 and half at $0.50 per million.
    assert (lookup.requests, lookup.tokens.input, lookup.tokens.cached) == (1, 300, 150)
    assert lookup.usd == pytest.approx(300 * (0.5 * 2.0 + 0.5 * 0.5) / M)
    assert (lookup.calls, lookup.seconds, lookup.result_tokens) == (1, 0.5, 300)
    search = tools["search"]
    # Carried by the third request (after the compaction, index 5 is still sent), uncached.
    assert (search.requests, search.tokens.input, search.tokens.cached) == (1, 500, 0)
    assert search.usd == pytest.approx(500 * 2.0 / M)
    assert (search.calls, search.seconds) == (1, 1.5)

    total = (await read_cost(store)).total
    # The summary request of the compaction is a request of the run, priced as recorded.
    assert total.requests == 4
    assert total.usd == pytest.approx(
        (100 * 2.0 + (300 * 2.0 + 300 * 0.5) + (700 * 2.0 + 10 * 8.0) + (50 * 2.0 + 10 * 8.0)) / M
    )


async def test_without_a_compaction_every_later_request_carries_a_result(
    store: EventStore,
) -> None:
    steps = [
        (
            [called("r1"), responded("cheap", CHEAP, usage(10), ("a1", "lookup"))],
            [asks(("a1", "lookup"))],
        ),
        ([completed("a1", "lookup", 0.25)], [result("a1", "lookup", 40)]),
        (
            [called("r2"), responded("cheap", CHEAP, usage(60), ("a2", "lookup"))],
            [asks(("a2", "lookup"))],
        ),
        ([completed("a2", "lookup", 0.25)], [result("a2", "lookup", 70)]),
        ([called("r3"), responded("cheap", CHEAP, usage(140))], [Message.assistant("done")]),
    ]
    await write_run(store, "run_1", steps)
    (line,) = (await read_cost(store, by=["tool"])).lines
    # The first result rides in requests 2 and 3, the second in request 3: $1 per million.
    assert line.requests == 2  # request 2 (one result) and request 3 (both)
    assert line.tokens.input == 40 + (40 + 70)
    assert line.usd == pytest.approx((40 + 40 + 70) * 1.0 / M)
    assert (line.calls, line.result_tokens) == (2, 40 + 70)


async def test_the_model_is_the_one_that_answered_after_a_fallback(store: EventStore) -> None:
    fell_back = NewEvent(
        payload=ModelFallback(
            request_id="r1",
            from_model="first",
            to_model="second",
            reason="error",
            status=503,
            error="ModelAPIError",
            message="overloaded",
            delay_s=0.0,
        )
    )
    # Events written before `model_responded` named its model: the fallback notice tells.
    steps = [
        (
            [
                called("r1", "fallback:first,second"),
                fell_back,
                responded(None, CHEAP, usage(10, cost=10 * 1.0 / M)),
            ],
            [Message.assistant("ok")],
        )
    ]
    await write_run(store, "run_1", steps)
    (line,) = (await read_cost(store, by=["model"])).lines
    assert line.key == {"model": "second"}
    assert line.usd == pytest.approx(10 * 1.0 / M)


async def test_an_old_event_without_prices_is_unknown_unless_it_cost_something(
    store: EventStore,
) -> None:
    steps = [
        ([called("r1"), responded("old", None, usage(10, cost=0.25))], []),
        ([called("r2"), responded("old", None, usage(10))], [Message.assistant("ok")]),
    ]
    await write_run(store, "run_1", steps)
    (line,) = (await read_cost(store, by=["model"])).lines
    assert (line.usd, line.usd_priced, line.unpriced_requests) == (None, 0.25, 1)


async def test_a_resumed_run_charges_its_inherited_results_to_their_tool(
    store: EventStore,
) -> None:
    await write_run(
        store,
        "run_1",
        [
            (
                [called("r1"), responded("cheap", CHEAP, usage(10), ("a1", "lookup"))],
                [asks(("a1", "lookup"))],
            ),
            ([completed("a1", "lookup", 0.5)], [result("a1", "lookup", 30)]),
        ],
    )
    submitted = NewEvent(payload=RunSubmitted(agent="ops", task="find it", parent_run_id="run_1"))
    inherited = [asks(("a1", "lookup")), result("a1", "lookup", 30)]
    await store.create_run(
        NewRun(run_id="run_2", agent="ops", resumed_from="run_1"),
        events=[submitted],
        messages=[Message.system("be brief"), Message.user("find it"), *inherited],
    )
    await store.append(
        StepWrite(run_id="run_2", events=[called("r9"), responded("cheap", CHEAP, usage(50))])
    )
    lines = (await read_cost(store, by=["tool"])).lines
    (line,) = lines
    assert line.key == {"tool": "lookup"}
    # The child's first request carried the inherited result; the parent's never did.
    assert (line.requests, line.tokens.input, line.calls) == (1, 30, 1)
    assert line.runs == 2
    assert line.usd == pytest.approx(30 * 1.0 / M)


async def test_an_empty_store_costs_nothing(tmp_path: Path) -> None:
    async with await open_store(tmp_path / "h.db") as empty:
        report = await read_cost(empty, by=["model", "tool"])
    assert report.lines == ()
    assert (report.total.runs, report.total.usd) == (0, 0.0)


async def test_a_run_handed_over_splits_its_cost_between_its_agents(store: EventStore) -> None:
    # triage asks once and hands over (its call's result: 20 tokens); billing looks up
    # (30 tokens) and answers. The run's row names its last agent, billing.
    handoff = Handoff(
        step=1, call_id="h1", from_agent="triage", to_agent="billing", reason=None, count=1
    )
    steps = [
        (
            [called("r1"), responded("cheap", CHEAP, usage(100, cost=100e-6), ("h1", "transfer"))],
            [asks(("h1", "transfer"))],
        ),
        (
            [completed("h1", "transfer", 0.0), NewEvent(payload=handoff)],
            [result("h1", "transfer", 20)],
        ),
        (
            [called("r2"), responded("cheap", CHEAP, usage(200, cost=200e-6), ("l1", "lookup"))],
            [asks(("l1", "lookup"))],
        ),
        ([completed("l1", "lookup", 0.5)], [result("l1", "lookup", 30)]),
        (
            [called("r3"), responded("cheap", CHEAP, usage(400, cost=400e-6))],
            [Message.assistant("ok")],
        ),
    ]
    await write_run(store, "run_1", steps)
    await store.append(StepWrite(run_id="run_1", update=RunUpdate(agent="billing")))
    by_agent = {line.key["agent"]: line for line in (await read_cost(store, by=["agent"])).lines}
    assert by_agent.keys() == {"triage", "billing"}
    assert (by_agent["triage"].requests, by_agent["triage"].tokens.input) == (1, 100)
    assert by_agent["triage"].usd == pytest.approx(100e-6)
    assert (by_agent["billing"].requests, by_agent["billing"].tokens.input) == (2, 600)
    assert by_agent["billing"].usd == pytest.approx(600e-6)
    assert by_agent["triage"].runs == by_agent["billing"].runs == 1
    lines = (await read_cost(store, by=["agent", "tool"])).lines
    tools = {(line.key["agent"], line.key["tool"]): line for line in lines}
    # transfer's result (20) rides in requests 2 and 3, both billing's: the call was triage's.
    assert tools["triage", "transfer"].calls == 1
    assert tools["triage", "transfer"].result_tokens == 20
    assert tools["billing", "transfer"].tokens.input == 20 + 20
    assert (tools["billing", "lookup"].calls, tools["billing", "lookup"].tokens.input) == (1, 30)
