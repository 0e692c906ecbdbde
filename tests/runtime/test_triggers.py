"""Triggers: a reviewer started on every finished coder run, exactly once, on a real store."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import Harness
from harness.core.events import RunSubmitted, TriggerFired, payloads
from harness.errors import ConfigError
from harness.observability.context import TraceContext
from harness.runtime import Settings, load_settings
from harness.runtime._trigger_rules import MAX_CHAIN
from harness.runtime.triggers import trigger_run_id
from harness.store.protocol import RunRecord

sys.path.insert(0, str(Path(__file__).parent / "processes"))

from trigger_agents import REVIEW, coder, reviewer


def harness(tmp_path: Path, store: str, **kwargs: Any) -> Harness:
    return Harness(Settings(home=tmp_path), store=store, agents=(coder(), reviewer()), **kwargs)


def review_on(h: Harness, **kwargs: Any) -> None:
    h.on("run_finished", {"agent": "coder"}, start="reviewer", task=REVIEW, **kwargs)


async def runs_of(h: Harness, agent: str) -> list[RunRecord]:
    return sorted(await h.store.list_runs(agent=agent, limit=None), key=lambda r: r.created_at)


async def settled(h: Harness, agent: str, count: int, timeout: float = 30) -> list[RunRecord]:
    """The `count` runs of `agent`, once all of them have ended (no more may come)."""
    async with asyncio.timeout(timeout):
        while True:
            runs = await runs_of(h, agent)
            if len(runs) >= count and all(r.finished_at is not None for r in runs):
                await asyncio.sleep(0.3)  # a few more polls: nothing else may start
                again = await runs_of(h, agent)
                assert len(again) == len(runs)
                return again
            await asyncio.sleep(0.02)


def source(run: RunRecord) -> str:
    return str(run.metadata["trigger"]["source_run_id"])


async def test_a_reviewer_starts_once_on_each_finished_coder_run(
    tmp_path: Path, store_target: str
) -> None:
    async with harness(tmp_path, store_target) as h:
        review_on(h)
        coded = [await h.run("coder", f"fix bug {n}") for n in range(3)]
        reviews = await settled(h, "reviewer", 3)
        events = {r.run_id: [e async for e in h.events(r.run_id)] for r in reviews}
        ends = {c.run_id: [e async for e in h.events(c.run_id)][-1] for c in coded}
    assert sorted(source(r) for r in reviews) == sorted(c.run_id for c in coded)
    for review in reviews:
        coder_run = next(c for c in coded if c.run_id == source(review))
        end = ends[coder_run.run_id]
        assert review.task == (
            f"Review the work of run {coder_run.run_id} (coder, final_answer): "
            f"patched: fix bug {coded.index(coder_run)}"
        )
        assert review.run_id == trigger_run_id("reviewer-on-run_finished", end)
        assert review.state == "COMPLETED"
        assert review.metadata["trigger"] == {
            "name": "reviewer-on-run_finished",
            "source_run_id": coder_run.run_id,
            "source_seq": end.seq,
            "chain": ["reviewer-on-run_finished"],
        }
        kinds = [e.type for e in events[review.run_id]]
        assert kinds[:2] == ["run_submitted", "trigger_fired"]
        (fired,) = payloads(events[review.run_id], TriggerFired)
        assert fired == TriggerFired(
            trigger="reviewer-on-run_finished",
            source_run_id=coder_run.run_id,
            source_seq=end.seq,
            source_event="run_finished",
        )
        assert payloads(events[review.run_id], RunSubmitted)[0].agent == "reviewer"


async def test_a_trigger_does_not_feed_itself_unless_reentrant_and_then_only_so_far(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "h.db")
    async with harness(tmp_path, store) as h:  # every finished run starts a reviewer
        h.on("run_finished", start="reviewer", task="again: {result}", name="any")
        await h.run("coder", "fix it")
        (review,) = await settled(h, "reviewer", 1)
    assert review.metadata["trigger"]["chain"] == ["any"]
    async with harness(tmp_path, str(tmp_path / "loop.db")) as h:
        h.on("run_finished", start="reviewer", task="again: {result}", name="any", reentrant=True)
        await h.run("coder", "fix it")
        chain = await settled(h, "reviewer", MAX_CHAIN)
    assert [len(r.metadata["trigger"]["chain"]) for r in chain] == list(range(1, MAX_CHAIN + 1))


async def test_events_from_before_a_trigger_existed_do_not_fire(tmp_path: Path) -> None:
    store = str(tmp_path / "h.db")
    async with harness(tmp_path, store) as h:
        await h.run("coder", "before")
    async with harness(tmp_path, store) as h:
        review_on(h, name="review")
        await asyncio.sleep(0.3)
        assert await runs_of(h, "reviewer") == []
        after = await h.run("coder", "after")
        (review,) = await settled(h, "reviewer", 1)
    assert source(review) == after.run_id


async def test_events_committed_while_no_process_had_the_trigger_fire_at_its_next_start(
    tmp_path: Path, store_target: str
) -> None:
    async with harness(tmp_path, store_target) as h:
        review_on(h, name="review")  # the trigger's cursor is stored here and now
    async with harness(tmp_path, store_target) as h:  # no trigger in this process
        coded = [await h.run("coder", f"fix {n}") for n in range(2)]
        await asyncio.sleep(0.3)
        assert await runs_of(h, "reviewer") == []
    async with harness(tmp_path, store_target) as h:
        review_on(h, name="review")
        reviews = await settled(h, "reviewer", 2)
    assert sorted(map(source, reviews)) == sorted(c.run_id for c in coded)


async def test_two_harnesses_with_the_same_trigger_on_one_store_fire_once_in_all(
    tmp_path: Path, store_target: str
) -> None:
    async with (
        harness(tmp_path, store_target) as one,
        harness(tmp_path, store_target) as two,
    ):
        review_on(one, name="review")
        review_on(two, name="review")
        coded = await asyncio.gather(
            *(h.run("coder", f"fix {n}") for n in range(4) for h in (one, two))
        )
        reviews = await settled(one, "reviewer", 8)
    assert sorted(map(source, reviews)) == sorted(c.run_id for c in coded)


async def test_match_on_lists_task_types_and_fields_of_the_event(tmp_path: Path) -> None:
    async with harness(tmp_path, str(tmp_path / "h.db")) as h:
        h.on(
            "run_finished",
            {"agent": ["coder", "fixer"], "task_type": "bugfix", "complete": True},
            start="reviewer",
            task="{trigger} #{seq} of {event}: {output} [{task_type}]",
            name="bugfix-review",
            task_type="review",
            priority=5,
        )
        await h.run("coder", "not a bug fix")
        fixed = await h.run("coder", "the fix", task_type="bugfix")
        (review,) = await settled(h, "reviewer", 1)
        end = [e async for e in h.events(fixed.run_id)][-1]
    assert review.task == f"bugfix-review #{end.seq} of run_finished: patched: the fix [bugfix]"
    assert (review.task_type, review.priority) == ("review", 5)


@pytest.mark.parametrize(
    ("event", "match", "start", "task", "error"),
    [
        ("run_done", None, "reviewer", "x", "unknown event type 'run_done'; use one of"),
        ("model_delta", None, "reviewer", "x", "unknown event type 'model_delta'"),
        ("run_finished", None, "nobody", "x", "no agent named 'nobody'"),
        ("run_finished", None, "reviewer", "see {resutl}", "unknown placeholder {resutl}"),
        ("run_finished", None, "reviewer", "{result!r}", "unknown placeholder {result!r}"),
        ("run_finished", None, "reviewer", "{result:>9}", "unknown placeholder {result:>9}"),
        ("run_finished", None, "reviewer", "{ broken", "task template '{ broken'"),
        ("run_finished", None, "reviewer", "  ", "give the started run's task"),
        ("run_finished", {"colour": "red"}, "reviewer", "x", "cannot match on 'colour'"),
        ("run_finished", {"usage": 1}, "reviewer", "x", "cannot match on 'usage'"),
        ("run_finished", {"state": "DONE"}, "reviewer", "x", "'DONE' is not a run state"),
        ("run_finished", {"agent": []}, "reviewer", "x", "non-empty list"),
        ("run_finished", {"agent": {"a": 1}}, "reviewer", "x", "give a string, number"),
    ],
)
async def test_a_bad_trigger_is_refused_when_registered_with_what_is_wrong(
    tmp_path: Path,
    event: str,
    match: dict[str, Any] | None,
    start: str,
    task: str,
    error: str,
) -> None:
    h = harness(tmp_path, str(tmp_path / "h.db"))
    with pytest.raises(ConfigError, match=_escaped(error)):
        h.on(event, match, start=start, task=task)
    assert h.triggers == ()


def test_a_trigger_name_is_a_label_and_unique(tmp_path: Path) -> None:
    h = harness(tmp_path, str(tmp_path / "h.db"))
    with pytest.raises(ConfigError, match="trigger name 'a b' is not a label"):
        review_on(h, name="a b")
    review_on(h)
    with pytest.raises(
        ConfigError, match="a trigger named 'reviewer-on-run_finished' exists already"
    ):
        review_on(h)
    assert [t.name for t in h.triggers] == ["reviewer-on-run_finished"]


def _escaped(text: str) -> str:
    import re

    return re.escape(text)


TOML_AGENTS = """
[agents.coder]
instructions = "You fix bugs."
[agents.reviewer]
instructions = "You review fixes."
"""


def write_config(tmp_path: Path, triggers: str) -> None:
    (tmp_path / "harness.toml").write_text(TOML_AGENTS + triggers)


def test_triggers_of_harness_toml_are_checked_when_the_file_is_read(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        """
[[triggers]]
name = "review"
on = "run_finished"
match = { agent = "coder", termination = ["final_answer", "max_steps"] }
start = "reviewer"
task = "Review run {run_id}: {result}"
task_type = "review"
""",
    )
    (trigger,) = load_settings(tmp_path).triggers
    assert trigger.name == "review"
    assert trigger.match == {"agent": ("coder",), "termination": ("final_answer", "max_steps")}
    assert (trigger.start, trigger.task_type, trigger.reentrant) == ("reviewer", "review", False)


@pytest.mark.parametrize(
    ("table", "error"),
    [
        (
            'on = "run_finished"\nstart = "ghost"\ntask = "x"',
            "key 'triggers.0.start': no agent named 'ghost'",
        ),
        (
            'on = "finished"\nstart = "reviewer"\ntask = "x"',
            "key 'triggers.0': trigger 'reviewer-on-finished': unknown event type",
        ),
        ('on = "run_finished"\nstart = "reviewer"\ntask = "{nope}"', "unknown placeholder {nope}"),
        ('on = "run_finished"\nstart = "reviewer"', "key 'triggers.0.task': Field required"),
        ('on = "run_finished"\nstart = "reviewer"\ntask = "x"\nwhen = 1', "key 'triggers.0.when'"),
        ('on = "run_finished"\nstart = "reviewer"\ntask = "x"\ntask_type = "a b"', "not a label"),
    ],
)
def test_a_bad_trigger_table_names_the_file_and_the_key(
    tmp_path: Path, table: str, error: str
) -> None:
    write_config(tmp_path, f"\n[[triggers]]\n{table}\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path)
    assert str(tmp_path / "harness.toml") in str(caught.value)
    assert error in str(caught.value)


def test_two_trigger_tables_may_not_share_a_name(tmp_path: Path) -> None:
    table = '[[triggers]]\non = "run_finished"\nstart = "reviewer"\ntask = "x"\n'
    write_config(tmp_path, table + table)
    problem = "key 'triggers.1.name': two triggers are named"
    with pytest.raises(ConfigError, match=_escaped(problem)):
        load_settings(tmp_path)


async def test_harness_toml_triggers_fire_in_a_process_that_adopts_runs(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        '[[triggers]]\nname = "review"\non = "run_finished"\nmatch = { agent = "coder" }\n'
        'start = "reviewer"\ntask = "Review: {result}"\n',
    )
    settings = load_settings(tmp_path)
    agents = (coder(), reviewer())
    store = str(tmp_path / "h.db")
    async with Harness(settings, store=store, agents=agents, adopt=False) as h:
        assert h.triggers == ()  # `harness run`'s kind of process fires none
    async with Harness(settings, store=store, agents=agents) as h:
        assert [t.name for t in h.triggers] == ["review"]
        await h.run("coder", "fix")
        (review,) = await settled(h, "reviewer", 1)
    assert review.task == "Review: patched: fix"


async def test_a_triggered_run_renders_and_traces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli.render import JsonRenderer, LiveRenderer
    from harness.observability.spans import TraceBuilder

    async with harness(tmp_path, str(tmp_path / "h.db")) as h:
        review_on(h, name="review")
        coded = await h.run("coder", "fix it")
        (review,) = await settled(h, "reviewer", 1)
        events = [e async for e in h.events(review.run_id)]
    live = LiveRenderer()
    builder = TraceBuilder(review.run_id)
    spans = []
    for event in events:
        live(event)
        JsonRenderer()(event)
        spans += builder.feed(event)
    out = capsys.readouterr().out
    assert "started by trigger review on run_finished #" in out
    assert coded.run_id in out
    assert '"type":"trigger_fired"' in out
    assert spans  # the run's trace is whole: the trigger's event breaks nothing


def test_on_may_not_take_the_name_of_a_harness_toml_trigger(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        '[[triggers]]\nname = "review"\non = "run_finished"\nstart = "reviewer"\ntask = "x"\n',
    )
    h = Harness(load_settings(tmp_path), store=str(tmp_path / "h.db"))
    with pytest.raises(ConfigError, match=_escaped("a trigger named 'review' is in harness.toml")):
        review_on(h, name="review")


async def test_a_trigger_that_cannot_start_its_run_waits_and_fires_once_it_can(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The queue is full when the coder's run ends: the event is not skipped, it fires later."""
    from harness import Agent
    from harness.gateway.scripted import FunctionModel

    store = str(tmp_path / "h.db")
    blocker = Agent(name="blocker", model=FunctionModel(lambda _: "done", latency_s=3600))
    async with (
        harness(tmp_path, store) as worker,  # executes the coder's run, fires nothing
        Harness(
            Settings(home=tmp_path),
            store=store,
            agents=(reviewer(), blocker),
            max_concurrent=1,  # held by the blocker
            max_queue=0,  # and no room to queue the reviewer's run
            adopt=False,
        ) as full,
    ):
        blocked = await full.submit(blocker, "hold the only slot")
        review_on(full, name="review")
        await asyncio.sleep(0.2)
        coded = await worker.run("coder", "fix it")
        async with asyncio.timeout(10):
            while "cannot start" not in caplog.text:
                await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # polls go by: still nothing started, nothing skipped
        assert await runs_of(full, "reviewer") == []
        await full.cancel(blocked)
        (review,) = await settled(full, "reviewer", 1)
    assert source(review) == coded.run_id
    assert "queue" in caplog.text


async def test_a_triggered_run_continues_the_trace_of_its_source_run(
    tmp_path: Path, store_target: str
) -> None:
    async with harness(tmp_path, store_target) as h:
        review_on(h)
        coded = await h.run("coder", "fix bug 7")
        (review,) = await settled(h, "reviewer", 1)
        coder_row = await h.get(coded.run_id)
    assert coder_row.trace_parent is not None
    assert review.trace_parent is not None
    source_trace = TraceContext.parse(coder_row.trace_parent)
    own = TraceContext.parse(review.trace_parent)
    assert own.trace_id == source_trace.trace_id  # one trace: the coder's, then its review
    assert own.span_id != source_trace.span_id
    assert review.metadata["trace_caller"] == source_trace.span_id  # under the coder's run span
