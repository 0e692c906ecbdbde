"""The queue of pending runs: claimed in order, a batch at a time, past runs it cannot take."""

import asyncio
from pathlib import Path

from harness import Agent, Harness, Message, ModelRequest
from harness.core.states import RunState
from harness.runtime import Settings
from harness.testing import FunctionModel, reply


def recorder(order: list[str], *, name: str = "m", latency_s: float = 0.0) -> FunctionModel:
    """A model that notes each run's task when it is first called, then answers."""

    async def answer(request: ModelRequest) -> Message:
        order.append(str(request.messages[-1].content))
        await asyncio.sleep(latency_s)
        return reply("done")

    return FunctionModel(answer, name=name)


async def finished(h: Harness, run_ids: list[str]) -> None:
    async with asyncio.timeout(30):
        for run_id in run_ids:
            assert (await h.wait(run_id)).output == "done"


async def test_a_long_queue_runs_by_priority_then_age_from_its_very_first_run(
    tmp_path: Path,
) -> None:
    """The oldest runs of a queue far longer than the claim window are not left for last."""
    order: list[str] = []
    agent = Agent(name="queued", model=recorder(order))
    priorities = [0] * 20 + [2, 1, 2, 0, 1]
    async with Harness(Settings(home=tmp_path), execute=False) as queue:
        ids = [await queue.submit(agent, f"t{i:02d}", priority=p) for i, p in enumerate(priorities)]
    async with Harness(Settings(home=tmp_path), agents=(agent,), max_concurrent=1) as h:
        await finished(h, ids)
    expected = sorted(range(len(priorities)), key=lambda i: (-priorities[i], i))
    assert order == [f"t{i:02d}" for i in expected]


async def test_queued_runs_this_process_cannot_take_do_not_hold_up_the_others(
    tmp_path: Path,
) -> None:
    """Runs of an agent only another process knows wait at the head; the rest go past."""
    order: list[str] = []
    theirs = Agent(name="theirs", model=recorder(order))  # a model object: not portable
    ours = Agent(name="ours", model=recorder(order))
    async with Harness(Settings(home=tmp_path), execute=False) as queue:
        waiting = [await queue.submit(theirs, f"theirs {i}", priority=9) for i in range(3)]
        ids = [await queue.submit(ours, f"ours {i}") for i in range(5)]
    async with Harness(Settings(home=tmp_path), agents=(ours,), max_concurrent=2) as h:
        await finished(h, ids)
        left = [await h.get(run_id) for run_id in waiting]
    assert sorted(order) == [f"ours {i}" for i in range(5)]
    assert [(r.state, r.owner) for r in left] == [(RunState.PENDING, None)] * 3


async def test_a_model_at_its_limit_lets_queued_runs_of_other_models_start(
    tmp_path: Path,
) -> None:
    """The head of the queue waits for its model; runs of other models start beside it."""
    order: list[str] = []
    slow = Agent(name="slow", model=recorder(order, name="m1", latency_s=1.0))
    fast = Agent(name="fast", model=recorder(order, name="m2"))
    async with Harness(Settings(home=tmp_path), execute=False) as queue:
        ids = [await queue.submit(slow, f"slow {i}", priority=1) for i in range(5)]
        ids += [await queue.submit(fast, f"fast {i}") for i in range(3)]
    async with Harness(
        Settings(home=tmp_path), agents=(slow, fast), max_concurrent=3, model_limits={"m1": 1}
    ) as h:
        await finished(h, ids)
    assert order[0] == "slow 0"
    assert sorted(order[1:4]) == ["fast 0", "fast 1", "fast 2"]  # not after the slow ones
    assert order[4:] == ["slow 1", "slow 2", "slow 3", "slow 4"]


async def test_a_burst_of_queued_runs_is_claimed_a_batch_at_a_time(tmp_path: Path) -> None:
    """Every run of a long queue finishes once, each under the lease of the one worker."""
    order: list[str] = []
    agent = Agent(name="many", model=recorder(order))
    async with Harness(Settings(home=tmp_path), execute=False, max_queue=300) as queue:
        ids = [await queue.submit(agent, f"t{i}") for i in range(250)]
    async with Harness(Settings(home=tmp_path), agents=(agent,), max_concurrent=40) as h:
        await finished(h, ids)
        events = await h.store.events_of_runs(ids, types=["run_started"])
    assert sorted(order) == sorted(f"t{i}" for i in range(250))
    assert len(events) == 250
