"""The store's part of A/B experiments: each run's experiment and variant, and stops."""

from __future__ import annotations

from harness.store import EventStore, ExperimentStop, NewRun

from .conftest import START, FakeClock


async def test_a_runs_experiment_and_variant_read_back_and_filter_runs(store: EventStore) -> None:
    await store.create_run(
        NewRun(run_id="run_a", agent="support", experiment="refund-model", variant="a")
    )
    await store.create_run(
        NewRun(run_id="run_b", agent="support", experiment="refund-model", variant="b")
    )
    await store.create_run(NewRun(run_id="run_x", agent="support"))
    run = await store.get_run("run_b")
    assert run is not None
    assert (run.experiment, run.variant) == ("refund-model", "b")
    plain = await store.get_run("run_x")
    assert plain is not None
    assert (plain.experiment, plain.variant) == (None, None)
    found = await store.list_runs(experiment="refund-model", limit=None)
    assert sorted((r.run_id, r.variant) for r in found) == [("run_a", "a"), ("run_b", "b")]
    claimed = await store.claim("w1", lease_s=30, limit=10)
    assert {r.run_id: r.variant for r in claimed} == {"run_a": "a", "run_b": "b", "run_x": None}


async def test_the_last_stop_of_an_experiment_stands(store: EventStore, clock: FakeClock) -> None:
    assert await store.experiment_stops() == {}
    await store.stop_experiment(ExperimentStop(experiment="refund-model", keep="a", by="user:x"))
    clock.advance(5)
    await store.stop_experiment(ExperimentStop(experiment="refund-model", keep="b", by="user:y"))
    await store.stop_experiment(ExperimentStop(experiment="other", keep="c", by="user:x"))
    assert await store.experiment_stops() == {
        "other": ExperimentStop(experiment="other", keep="c", by="user:x", stopped_at=START + 5),
        "refund-model": ExperimentStop(
            experiment="refund-model", keep="b", by="user:y", stopped_at=START + 5
        ),
    }
