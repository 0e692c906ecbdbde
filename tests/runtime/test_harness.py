"""The runtime API over a real SQLite store: submit, wait, events, control, recovery basics."""

import asyncio
import gc
import logging
import time
from pathlib import Path

import pytest

from harness import Agent, Harness, Limits, Message, ModelRequest, tool
from harness.core import RunEvent
from harness.core.events import RunPaused, RunStarted, RunSubmitted, StepStarted
from harness.errors import InvalidTransition, RunError, RunQueueFull
from harness.gateway.scripted import Reply
from harness.runtime import EventBus, RunRecorder, Settings
from harness.store.protocol import NewEvent, NewRun
from harness.testing import FunctionModel, ScriptedModel, call, reply


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path)


def calculator(latency_s: float = 0.0, name: str = "calc") -> Agent:
    return Agent(
        name=name,
        model=ScriptedModel(
            [reply(None, call("add", {"a": 2, "b": 3})), reply("5")], latency_s=latency_s
        ),
        tools=[add],
    )


async def test_a_run_is_durable_and_its_events_are_numbered(tmp_path: Path) -> None:
    seen: list[RunEvent] = []
    async with Harness(settings(tmp_path)) as harness:
        result = await harness.run(calculator(), "2+3?", on_event=seen.append)
        stored = [e async for e in harness.events(result.run_id)]
        record = await harness.get(result.run_id)
        history = await harness.messages(result.run_id)
    assert result.output == "5"
    assert result.termination == "final_answer"
    assert [e.seq for e in seen] == list(range(1, len(seen) + 1))
    assert [(e.seq, e.type) for e in stored] == [(e.seq, e.type) for e in seen]
    assert seen[0].type == "run_submitted"
    assert seen[-1].type == "run_finished"
    assert record.state == "COMPLETED"
    assert record.usage.requests == 2
    assert [m.role for m in history] == ["system", "user", "assistant", "tool", "assistant"]
    assert history == list(result.messages)


async def test_everything_survives_reopening_the_store(tmp_path: Path) -> None:
    async with Harness(settings(tmp_path)) as harness:
        result = await harness.run(calculator(), "2+3?")
    async with Harness(settings(tmp_path), execute=False) as reopened:
        again = await reopened.wait(result.run_id, timeout=5)
        listed = await reopened.list(state="completed")
    assert again.output == "5"
    assert again.messages == result.messages
    assert [r.run_id for r in listed] == [result.run_id]


async def test_many_concurrent_runs_keep_their_events_apart(tmp_path: Path) -> None:
    async with Harness(settings(tmp_path), max_concurrent=50) as harness:
        agents = [calculator(latency_s=0.01, name=f"calc{i}") for i in range(40)]
        results = await asyncio.gather(*(harness.run(a, "go") for a in agents))
        for r in results:
            seqs = [e.seq async for e in harness.events(r.run_id)]
            assert seqs == list(range(1, len(seqs) + 1))
    assert all(r.output == "5" for r in results)


async def test_events_follow_a_run_live_from_any_seq(tmp_path: Path) -> None:
    async with Harness(settings(tmp_path)) as harness:
        run_id = await harness.submit(calculator(latency_s=0.05), "2+3?")
        live = [e async for e in harness.events(run_id)]
        later = [e async for e in harness.events(run_id, after_seq=3)]
    assert live[-1].type == "run_finished"
    assert [e.seq for e in later] == list(range(4, live[-1].seq + 1))


async def test_cancel_during_a_model_call_keeps_what_was_done(tmp_path: Path) -> None:
    model = FunctionModel(lambda r: reply("never"), latency_s=30)
    agent = Agent(name="slow", model=model)
    async with Harness(settings(tmp_path)) as harness:
        run_id = await harness.submit(agent, "wait")
        while (await harness.get(run_id)).state != "RUNNING" or not model.requests:
            await asyncio.sleep(0.02)
        await harness.cancel(run_id, reason="changed my mind")
        result = await harness.wait(run_id, timeout=10)
        record = await harness.get(run_id)
        events = [e async for e in harness.events(run_id)]
    assert result.termination == "cancelled"
    assert record.state == "CANCELLED"
    cancelled = events[-1]
    assert cancelled.type == "run_cancelled"
    assert cancelled.payload.reason == "changed my mind"
    assert str(cancelled.payload.by).startswith("user:")
    assert [m.role for m in result.messages] == ["system", "user"]


async def test_a_waiter_that_gives_up_leaves_the_others_their_result(tmp_path: Path) -> None:
    gate = asyncio.Event()

    async def model(request: ModelRequest) -> Message:
        await gate.wait()
        return Message.assistant("done")

    async with Harness(settings(tmp_path)) as harness:
        run_id = await harness.submit(Agent(name="slow", model=FunctionModel(model)), "go")
        patient = asyncio.ensure_future(harness.wait(run_id))
        with pytest.raises(TimeoutError):
            await harness.wait(run_id, timeout=0.05)
        given_up = asyncio.ensure_future(harness.wait(run_id))
        await asyncio.sleep(0.05)
        given_up.cancel()
        gate.set()
        result = await asyncio.wait_for(patient, timeout=10)
        again = await harness.wait(run_id, timeout=10)
    assert given_up.cancelled()
    assert result.output == again.output == "done"


async def test_an_executing_harness_raises_the_young_gc_threshold_left_at_the_default(
    tmp_path: Path,
) -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)  # CPython's defaults
        async with Harness(settings(tmp_path), execute=False):
            assert gc.get_threshold() == (700, 10, 10)  # executes nothing: left alone
        async with Harness(settings(tmp_path)):
            assert gc.get_threshold() == (10_000, 10, 10)
        gc.set_threshold(500, 5, 5)  # the process's own choice
        async with Harness(settings(tmp_path)):
            assert gc.get_threshold() == (500, 5, 5)
    finally:
        gc.set_threshold(*before)


async def test_pause_at_a_step_boundary_then_resume(tmp_path: Path) -> None:
    calls = 0

    def slow_then_done(request: object) -> object:
        nonlocal calls
        calls += 1
        return reply(None, call("add", {"a": calls, "b": 1})) if calls < 3 else reply("done")

    agent = Agent(
        name="pausable",
        model=FunctionModel(slow_then_done, latency_s=0.2),  # type: ignore[arg-type]
        tools=[add],
    )
    async with Harness(settings(tmp_path)) as harness:
        run_id = await harness.submit(agent, "count")
        while calls < 1:
            await asyncio.sleep(0.01)
        await harness.pause(run_id)
        while (await harness.get(run_id)).state != "PAUSED":
            await asyncio.sleep(0.02)
        paused_at = calls
        await asyncio.sleep(0.5)
        assert calls == paused_at  # nothing happens while paused
        with pytest.raises(InvalidTransition, match=f"cannot pause run {run_id}: it is PAUSED"):
            await harness.pause(run_id)
        assert await harness.resume(run_id) == run_id
        result = await harness.wait(run_id, timeout=10)
        kinds = [e.type async for e in harness.events(run_id)]
    assert result.output == "done"
    assert "run_paused" in kinds
    assert "run_resumed" in kinds


async def test_resume_of_a_failed_run_starts_a_new_run_from_its_history(tmp_path: Path) -> None:
    answers = iter(
        [
            reply(None, call("add", {"a": 1, "b": 1})),
            RuntimeError("provider down"),
            reply("recovered"),
        ]
    )

    def flaky(request: object) -> object:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    agent = Agent(name="flaky", model=FunctionModel(flaky), tools=[add])  # type: ignore[arg-type]
    async with Harness(settings(tmp_path)) as harness:
        failed = await harness.run(agent, "add")
        assert failed.termination == "error"
        assert (await harness.get(failed.run_id)).state == "FAILED"
        new_id = await harness.resume(failed.run_id)
        result = await harness.wait(new_id, timeout=10)
        record = await harness.get(new_id)
    assert new_id != failed.run_id
    assert record.resumed_from == failed.run_id
    assert result.output == "recovered"
    assert [m.role for m in result.messages][:4] == ["system", "user", "assistant", "tool"]


async def test_illegal_moves_say_why(tmp_path: Path) -> None:
    async with Harness(settings(tmp_path)) as harness:
        done = await harness.run(calculator(), "2+3?")
        with pytest.raises(InvalidTransition, match=r"cannot pause run .*: it is COMPLETED"):
            await harness.pause(done.run_id)
        with pytest.raises(InvalidTransition, match=r"cannot cancel run .*: it is COMPLETED"):
            await harness.cancel(done.run_id)
        with pytest.raises(InvalidTransition, match=r"cannot resume run .*: it is COMPLETED"):
            await harness.resume(done.run_id)
        with pytest.raises(RunError, match="no run run_missing"):
            await harness.get("run_missing")


async def test_a_queue_at_its_bound_refuses_more(tmp_path: Path) -> None:
    async with Harness(settings(tmp_path), execute=False, max_queue=3) as harness:
        for _ in range(3):
            await harness.submit(calculator(), "queued")
        with pytest.raises(RunQueueFull, match="3 runs are already waiting"):
            await harness.submit(calculator(), "one too many")


async def test_a_full_queue_makes_room_as_soon_as_a_waiting_run_leaves(tmp_path: Path) -> None:
    async with Harness(settings(tmp_path), execute=False, max_queue=3) as harness:
        waiting = [await harness.submit(calculator(), "queued") for _ in range(3)]
        with pytest.raises(RunQueueFull, match="3 runs are already waiting"):
            await harness.submit(calculator(), "one too many")
        await harness.cancel(waiting[0])
        await harness.submit(calculator(), "in the room it left")
        with pytest.raises(RunQueueFull, match="3 runs are already waiting"):
            await harness.submit(calculator(), "one too many again")


async def test_runs_another_process_queued_count_against_the_bound(tmp_path: Path) -> None:
    """A submit counts the store's waiting runs again once its last count is a second old."""
    async with (
        Harness(settings(tmp_path), execute=False, max_queue=5) as here,
        Harness(settings(tmp_path), execute=False, max_queue=100) as elsewhere,
    ):
        for _ in range(2):
            await here.submit(calculator(), "queued here")
        for _ in range(3):
            await elsewhere.submit(calculator(), "queued elsewhere")
        await asyncio.sleep(1.1)
        with pytest.raises(RunQueueFull, match="5 runs are already waiting"):
            await here.submit(calculator(), "one too many")


async def test_a_pending_run_can_be_cancelled_before_it_starts(tmp_path: Path) -> None:
    async with Harness(settings(tmp_path), execute=False) as harness:
        run_id = await harness.submit(calculator(), "never runs")
        await harness.cancel(run_id)
        record = await harness.get(run_id)
    assert record.state == "CANCELLED"


def test_run_sync_is_a_thin_wrapper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_HOME", str(tmp_path))
    agent = Agent(model=ScriptedModel([reply("hello")]), limits=Limits(max_steps=2))
    result = agent.run_sync("say hello")
    assert result.ok
    assert result.output == "hello"


def test_a_failing_subscriber_never_breaks_the_run(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus()
    received: list[int] = []

    def broken(event: RunEvent) -> None:
        raise RuntimeError("subscriber bug")

    bus.subscribe(broken)
    unsubscribe = bus.subscribe(lambda e: received.append(e.seq))
    recorder = RunRecorder("run_x", bus)
    with caplog.at_level(logging.ERROR):
        recorder.emit(StepStarted(step=1))
        recorder.emit(StepStarted(step=2))
    assert received == [1, 2]
    assert "subscriber bug" in caplog.text
    unsubscribe()
    recorder.emit(StepStarted(step=3))
    assert received == [1, 2]


async def test_a_slow_subscriber_never_slows_a_run(tmp_path: Path) -> None:
    received: list[RunEvent] = []

    async def slow(event: RunEvent) -> None:
        await asyncio.sleep(0.2)
        received.append(event)

    async with Harness(settings(tmp_path)) as harness:
        subscription = harness.bus.attach(slow)
        result = await harness.run(calculator(), "2+3?")
        finished_when_delivered = len(received)
        await subscription.close()
        total = (await harness.get(result.run_id)).last_seq
    assert result.output == "5"
    assert finished_when_delivered < total  # the run did not wait for its subscriber
    assert [e.seq for e in received] == list(range(1, total + 1))  # yet it got every event


async def test_calls_that_never_ran_are_not_counted_in_the_stored_usage(tmp_path: Path) -> None:
    agent = Agent(
        name="capped",
        model=ScriptedModel(
            [reply(None, call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4})), reply("3")]
        ),
        tools=[add],
        limits=Limits(max_tool_calls=1),
    )
    async with Harness(settings(tmp_path)) as harness:
        result = await harness.run(agent, "add")
        record = await harness.get(result.run_id)
    assert result.usage.tool_calls == 1
    assert record.usage.tool_calls == 1


async def test_a_model_call_made_before_a_crash_is_counted_in_the_usage(tmp_path: Path) -> None:
    looking, stop_here = asyncio.Event(), asyncio.Event()

    @tool(side_effects="idempotent")
    async def look(path: str) -> str:
        """Look at a path (safe to repeat)."""
        looking.set()
        await stop_here.wait()  # the first process stops while the call runs
        return f"saw {path}"

    def answer(request: ModelRequest) -> Reply:
        if request.messages[-1].role == "tool":
            return reply("seen")
        return reply(None, call("look", {"path": "x"}))

    first, second = FunctionModel(answer), FunctionModel(answer)
    async with Harness(settings(tmp_path)) as harness:
        run_id = await harness.submit(Agent(name="look", model=first, tools=[look]), "look")
        await looking.wait()
    stop_here.set()
    again = Agent(name="look", model=second, tools=[look])
    async with Harness(settings(tmp_path), agents=(again,)) as harness:
        result = await harness.wait(run_id)
        record = await harness.get(run_id)
    assert result.ok
    made = len(first.requests) + len(second.requests)
    assert result.usage.requests == record.usage.requests == made


@pytest.mark.parametrize("stopped", ["paused", "crashed"])
@pytest.mark.parametrize(("max_seconds", "termination"), [(50, "timeout"), (150, "final_answer")])
async def test_the_time_budget_counts_the_time_executed_before_a_resume_or_takeover(
    tmp_path: Path, stopped: str, max_seconds: float, termination: str
) -> None:
    # A run that executed for 100 s, then stood still (paused, or its owner died) for 900 s.
    agent = Agent(
        name="timed", model=ScriptedModel(["done"]), limits=Limits(max_seconds=max_seconds)
    )
    t0 = time.time() - 1000
    events = [
        NewEvent(payload=RunSubmitted(agent="timed", task="t", parent_run_id=None), ts=t0),
        NewEvent(payload=RunStarted(agent="timed", model="m", tools=(), max_steps=25), ts=t0),
        NewEvent(payload=StepStarted(step=1), ts=t0 + 100),
    ]
    if stopped == "paused":
        events.append(NewEvent(payload=RunPaused(at="step boundary"), ts=t0 + 100))
    state, owner = ("PAUSED", None) if stopped == "paused" else ("RUNNING", "gone:1")
    run = NewRun(
        run_id="run_timed",
        agent="timed",
        task="t",
        state=state,
        owner=owner,
        lease_s=0 if owner else None,
    )
    async with Harness(settings(tmp_path), agents=(agent,)) as harness:
        await harness.store.create_run(
            run, events=events, messages=[Message.system("s"), Message.user("t")]
        )
        if stopped == "paused":
            await harness.resume("run_timed")
        result = await harness.wait("run_timed")
    assert result.termination == termination


async def test_a_run_followed_live_shows_each_step_before_its_model_answers(
    tmp_path: Path,
) -> None:
    """`harness run` follows its run: its steps commit before each model call; a run nobody
    follows commits a step with its reply (one commit fewer per step)."""
    seen_during_call: dict[str, list[str]] = {}

    async with Harness(settings(tmp_path)) as harness:

        def agent(name: str) -> Agent:
            async def answer(request: object) -> str:
                (run,) = await harness.list(agent=name)
                events = await harness.store.events(run.run_id)
                seen_during_call[name] = [event.type for event in events]
                return "done"

            return Agent(name=name, model=FunctionModel(answer))

        followed: list[RunEvent] = []
        await harness.run(agent("followed"), "go", on_event=followed.append)
        await harness.wait(await harness.submit(agent("alone"), "go"))
    assert "model_called" in seen_during_call["followed"]
    assert "model_called" not in seen_during_call["alone"]
    assert [event.type for event in followed][-1] == "run_finished"
