"""A long run on Temporal renews its history: past `temporal_history_events` its workflow
continues as new at a step boundary, and the run goes on from the store with nothing lost
or repeated; a pause, a resume and a cancel reach it across renewals. Real dev server, real
SQLite; the only fakes are the models.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.client import Client, WorkflowExecutionStatus

from harness import Agent, Harness, Message, tool
from harness.core.states import RunState
from harness.runtime import Settings
from harness.runtime.runtime_settings import RuntimeSettings
from harness.testing import ScriptedModel, call, reply

HISTORY_EVENTS = 100
"""Small enough that a run of a dozen steps renews its history more than once."""


def temporal(home: Path, address: str, queue: str) -> Settings:
    runtime = RuntimeSettings(
        backend="temporal",
        temporal_address=address,
        task_queue=queue,
        temporal_history_events=HISTORY_EVENTS,
    )
    return Settings(home=home, runtime=runtime)


def ticker(ledger: Path, calls: int) -> Agent:
    """An agent that calls `tick` `calls` times, one per step, then answers."""

    @tool(side_effects="write")
    def tick(n: int) -> str:
        """Write a tick to the ledger."""
        with ledger.open("a") as out:
            out.write(f"{n}\n")
        return f"tick {n}"

    replies: list[Message | str] = [
        reply(f"step {n}", call("tick", {"n": n}, id=f"c{n}")) for n in range(calls)
    ]
    replies.append(reply(f"ticked {calls} times"))
    return Agent(name="ticker", model=ScriptedModel(replies), tools=[tick], instructions="Tick.")


async def executions(address: str, run_id: str) -> list[WorkflowExecutionStatus | None]:
    """The statuses of the run's workflow executions, first to last."""
    client = await Client.connect(address)
    statuses: list[WorkflowExecutionStatus | None] = []
    run: str | None = None
    while True:
        handle = client.get_workflow_handle(run_id, run_id=run)
        statuses.append((await handle.describe()).status)
        history = await handle.fetch_history()
        started = history.events[0].workflow_execution_started_event_attributes
        run = started.continued_execution_run_id or None
        if run is None:
            return statuses[::-1]


async def renewed(address: str, run_id: str, times: int, timeout: float = 60) -> None:
    """Wait until the run's workflow has continued as new `times` times."""
    async with asyncio.timeout(timeout):
        while len(await executions(address, run_id)) <= times:
            await asyncio.sleep(0.1)


async def state_of(h: Harness, run_id: str, *states: str, timeout: float = 60) -> None:
    async with asyncio.timeout(timeout):
        while (await h.get(run_id)).state not in states:
            await asyncio.sleep(0.05)


async def test_a_long_run_continues_as_new_and_ends_as_an_embedded_one(
    tmp_path: Path, temporal_address: str, task_queue: str, store_target: str
) -> None:
    """On either store: with PostgreSQL the activities write and load the run there."""
    async with Harness(Settings(home=tmp_path / "embedded")) as h:
        expected = await h.wait(await h.submit(ticker(tmp_path / "embedded.ledger", 25), "go"))
        embedded_events = await h.store.events(expected.run_id)
        embedded_messages = await h.store.messages(expected.run_id)
    home = tmp_path / "temporal"
    async with Harness(temporal(home, temporal_address, task_queue), store=store_target) as h:
        run_id = await h.submit(ticker(tmp_path / "ledger", 25), "go")
        result = await h.wait(run_id, timeout=120)
        events = await h.store.events(run_id)
        messages = await h.store.messages(run_id)
    statuses = await executions(temporal_address, run_id)
    assert len(statuses) >= 3, statuses  # 25 steps are a few hundred history events
    assert statuses[:-1] == [WorkflowExecutionStatus.CONTINUED_AS_NEW] * (len(statuses) - 1)
    assert statuses[-1] == WorkflowExecutionStatus.COMPLETED
    assert (result.output, result.termination, result.usage) == (
        expected.output,
        expected.termination,
        expected.usage,
    )
    # Nothing lost, nothing twice: each execution starts the loop again (`run_started`), as
    # a resume does; every other event, and every message, is that of the embedded run.
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert sum(e.type == "run_started" for e in events) == len(statuses)

    def steps(of: list) -> list[tuple[str, object, object]]:
        return [
            (e.type, getattr(e.payload, "step", None), getattr(e.payload, "call_id", None))
            for e in of
            if e.type != "run_started"
        ]

    assert steps(events) == steps(embedded_events)
    assert [(m.role, m.content, m.tool_calls) for m in messages] == [
        (m.role, m.content, m.tool_calls) for m in embedded_messages
    ]
    assert (tmp_path / "ledger").read_text() == "".join(f"{n}\n" for n in range(25))


async def test_pause_resume_and_cancel_reach_a_renewed_run(
    tmp_path: Path, temporal_address: str, task_queue: str
) -> None:
    ledger = tmp_path / "ledger"
    async with Harness(temporal(tmp_path / "home", temporal_address, task_queue)) as h:
        run_id = await h.submit(ticker(ledger, 400), "go")
        await renewed(temporal_address, run_id, 1)
        await h.pause(run_id)
        await state_of(h, run_id, RunState.PAUSED)
        ticks = ledger.read_text()
        await asyncio.sleep(0.5)
        assert ledger.read_text() == ticks, "a paused run does not tick"
        before = len(await executions(temporal_address, run_id))
        await h.resume(run_id)
        await renewed(temporal_address, run_id, before)  # it went on, and renewed again
        await h.cancel(run_id, reason="enough")
        await state_of(h, run_id, RunState.CANCELLED)
        events = await h.store.events(run_id)
    (cancelled,) = [e for e in events if e.type == "run_cancelled"]
    assert cancelled.payload.reason == "enough"
    assert [e.type for e in events].count("run_paused") == 1
    assert [e.type for e in events].count("run_resumed") == 1
    written = [int(line) for line in ledger.read_text().split()]
    assert written == list(range(len(written))), "each tick once, in order"
    assert 0 < len(written) < 400
