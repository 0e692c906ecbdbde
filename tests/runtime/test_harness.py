import asyncio
import logging
from pathlib import Path

import pytest

from harness import Agent, Harness, Limits, tool
from harness.core import RunEvent
from harness.runtime import EventBus, RunRecorder, Settings
from harness.testing import ScriptedModel, call, reply


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path)


async def test_harness_runs_an_agent_and_numbers_its_events(tmp_path: Path) -> None:
    model = ScriptedModel([reply(None, call("add", {"a": 2, "b": 3})), reply("5")])
    seen: list[RunEvent] = []
    async with Harness(settings(tmp_path)) as harness:
        result = await harness.run(Agent(model=model, tools=[add]), "2+3?", on_event=seen.append)
    assert result.output == "5"
    assert seen[0].type == "run_submitted"
    assert seen[0].payload["task"] == "2+3?"
    assert [e.seq for e in seen] == list(range(1, len(seen) + 1))
    assert {e.run_id for e in seen} == {result.run_id}
    assert harness.events(result.run_id) == tuple(seen)


async def test_concurrent_runs_keep_their_events_apart(tmp_path: Path) -> None:
    async with Harness(settings(tmp_path)) as harness:
        agents = [
            Agent(
                model=ScriptedModel(
                    [reply(None, call("add", {"a": i, "b": i})), reply(str(2 * i))], latency_s=0.01
                ),
                tools=[add],
            )
            for i in range(20)
        ]
        results = await asyncio.gather(*(harness.run(a, "go") for a in agents))
    assert [r.output for r in results] == [str(2 * i) for i in range(20)]
    for r in results:
        seqs = [e.seq for e in harness.events(r.run_id)]
        assert seqs == list(range(1, len(seqs) + 1))


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
        recorder.emit("step_started", {"step": 1})
        recorder.emit("step_started", {"step": 2})
    assert received == [1, 2]
    assert "subscriber bug" in caplog.text
    unsubscribe()
    recorder.emit("step_started", {"step": 3})
    assert received == [1, 2]
