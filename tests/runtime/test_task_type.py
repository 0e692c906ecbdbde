"""Task types: a label given at submit, kept with the run, its events and its resumption."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import Agent, Harness, ModelRequest
from harness.core.codec import event_to_dict
from harness.core.events import RunStarted, RunSubmitted, payloads
from harness.core.ids import TASK_TYPE_RULE
from harness.errors import ConfigError
from harness.runtime import Settings
from harness.testing import FunctionModel, ScriptedModel, reply


def echo() -> Agent:
    return Agent(name="echo", model=ScriptedModel([reply("done")] * 4))


async def test_a_task_type_is_stored_and_carried_by_the_first_events(tmp_path: Path) -> None:
    async with Harness(Settings(home=tmp_path)) as harness:
        typed = await harness.run(echo(), "refund order 42", task_type="refund")
        plain = await harness.run(echo(), "say hi")
        record = await harness.get(typed.run_id)
        events = [e async for e in harness.events(typed.run_id)]
        plain_events = [e async for e in harness.events(plain.run_id)]
        plain_record = await harness.get(plain.run_id)
        refunds = await harness.list(task_type="refund")
    assert (record.task_type, plain_record.task_type) == ("refund", None)
    assert [r.run_id for r in refunds] == [typed.run_id]
    assert payloads(events, RunSubmitted)[0].task_type == "refund"
    assert payloads(events, RunStarted)[0].task_type == "refund"
    assert event_to_dict(events[0])["payload"]["task_type"] == "refund"
    # Without one, the encoded payloads are as they always were.
    for event in plain_events[:2]:
        assert event.type in ("run_submitted", "run_started")
        assert "task_type" not in event_to_dict(event)["payload"]


@pytest.mark.parametrize("bad", ["", "two words", "x" * 65, "refund/42", "ünïcode"])
async def test_a_task_type_that_is_not_a_label_is_refused_before_a_run_exists(
    tmp_path: Path, bad: str
) -> None:
    async with Harness(Settings(home=tmp_path)) as harness:
        with pytest.raises(ConfigError) as caught:
            await harness.submit(echo(), "go", task_type=bad)
        assert await harness.list() == []
    assert TASK_TYPE_RULE in str(caught.value)
    assert repr(bad) in str(caught.value)


@pytest.mark.parametrize("good", ["refund", "billing.refund", "tier:2", "A_b-9", "x" * 64])
async def test_short_labels_are_task_types(tmp_path: Path, good: str) -> None:
    async with Harness(Settings(home=tmp_path)) as harness:
        run_id = await harness.submit(echo(), "go", task_type=good)
        await harness.wait(run_id, timeout=10)
        assert (await harness.get(run_id)).task_type == good


async def test_a_run_resumed_from_a_failed_one_keeps_its_task_type(tmp_path: Path) -> None:
    calls = 0

    def flaky(request: ModelRequest) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("the model's server fell over")
        return "done"

    agent = Agent(name="flaky", model=FunctionModel(flaky))
    async with Harness(Settings(home=tmp_path)) as harness:
        failed = await harness.run(agent, "refund order 7", task_type="refund")
        assert failed.termination == "error"
        resumed = await harness.resume(failed.run_id)
        result = await harness.wait(resumed, timeout=10)
        record = await harness.get(resumed)
        started = payloads([e async for e in harness.events(resumed)], RunStarted)
    assert result.output == "done"
    assert (record.resumed_from, record.task_type) == (failed.run_id, "refund")
    assert started[0].task_type == "refund"
