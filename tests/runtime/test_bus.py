"""The event bus: subscribers one event at a time, batch subscribers one committed step at a
time, each in order, and a failing subscriber never stopping the others."""

import asyncio
import logging
from collections.abc import Sequence

import pytest

from harness.core.events import RunEvent, StepStarted
from harness.runtime import EventBus
from harness.runtime.bus import BatchSubscriber


def events(run_id: str, *seqs: int) -> list[RunEvent]:
    return [RunEvent(run_id=run_id, seq=s, ts=float(s), payload=StepStarted(step=s)) for s in seqs]


class Batches:
    """A batch subscriber that keeps what it was handed, as it was handed."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[int]]] = []

    def __call__(self, event: RunEvent) -> None:
        self.calls.append(("event", [event.seq]))

    def batch(self, events: Sequence[RunEvent]) -> None:
        self.calls.append(("batch", [e.seq for e in events]))


def test_a_step_reaches_a_batch_subscriber_in_one_call_and_others_event_by_event() -> None:
    bus = EventBus()
    each: list[int] = []
    batches = Batches()
    assert isinstance(batches, BatchSubscriber)
    bus.subscribe(lambda e: each.append(e.seq))
    bus.subscribe(batches)
    bus.publish_batch(events("run_a", 3, 4, 5))
    bus.publish(events("run_a", 6)[0])
    bus.publish_batch([])
    assert each == [3, 4, 5, 6]
    assert batches.calls == [("batch", [3, 4, 5]), ("event", [6])]


def test_a_failing_subscriber_misses_its_batch_and_the_others_get_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus()

    class Broken(Batches):
        def batch(self, events: Sequence[RunEvent]) -> None:
            raise RuntimeError("batch bug")

    def broken(event: RunEvent) -> None:
        if event.seq == 2:
            raise RuntimeError("event bug")

    kept = Batches()
    each: list[int] = []
    bus.subscribe(Broken())
    bus.subscribe(broken)
    remove = bus.subscribe(lambda e: each.append(e.seq))
    bus.subscribe(kept)
    with caplog.at_level(logging.ERROR):
        bus.publish_batch(events("run_a", 1, 2, 3))
    assert each == [1, 2, 3]  # the plain subscriber after the broken ones got every event
    assert kept.calls == [("batch", [1, 2, 3])]
    assert "batch bug" in caplog.text
    assert "event bug" in caplog.text
    remove()
    bus.publish_batch(events("run_a", 4))
    assert each == [1, 2, 3]
    assert kept.calls[-1] == ("batch", [4])


def test_a_subscriber_added_while_publishing_gets_the_next_events_only() -> None:
    bus = EventBus()
    late: list[int] = []

    def adds(event: RunEvent) -> None:
        if event.seq == 1:
            bus.subscribe(lambda e: late.append(e.seq))

    bus.subscribe(adds)
    bus.publish_batch(events("run_a", 1, 2))
    bus.publish_batch(events("run_a", 3))
    assert late == [3]


async def test_an_attached_subscriber_gets_batches_queued_in_order_and_drops_the_oldest() -> None:
    bus = EventBus()
    got: list[int] = []

    async def slow(event: RunEvent) -> None:
        await asyncio.sleep(0)
        got.append(event.seq)

    subscription = bus.attach(slow, max_queue=4)
    bus.publish_batch(events("run_a", 1, 2, 3))
    bus.publish(events("run_a", 4)[0])
    bus.publish_batch(events("run_a", 5, 6))  # 6 waiting, 4 kept: 1 and 2 dropped
    await subscription.close()
    assert got == [3, 4, 5, 6]
    assert subscription.dropped == 2
    bus.publish_batch(events("run_a", 7))
    assert got == [3, 4, 5, 6]


def test_a_subscriber_naming_its_event_types_gets_only_those_alone_and_batches_whole() -> None:
    from harness.core.events import ModelDelta, RunFinished
    from harness.core.usage import Usage

    class Steps(Batches):
        event_types = frozenset({StepStarted})

    bus = EventBus()
    steps, each = Steps(), list[RunEvent]()
    bus.subscribe(steps)
    bus.subscribe(each.append)
    delta = RunEvent(run_id="run_a", seq=0, ts=1.0, payload=ModelDelta(step=1, text="hi"))
    finished = RunFinished(output="ok", termination="done", complete=True, usage=Usage())
    done = RunEvent(run_id="run_a", seq=9, ts=9.0, payload=finished)
    bus.publish(delta)
    bus.publish(events("run_a", 7)[0])
    bus.publish_batch([*events("run_a", 8), done])
    bus.publish(done)
    assert steps.calls == [("event", [7]), ("batch", [8, 9])]
    assert [e.seq for e in each] == [0, 7, 8, 9, 9]
