"""Keyset pages of `list_runs` (`before=`): every run once, in order, whatever is inserted.

The listing's order is `(created_at, run_id)`, newest first; a page's end is the key of its
last run, and the next page lists the runs after that key. Runs created while a reader
pages are newer than every page's end, so they never shift the pages still to come.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from harness.store import EventStore, NewRun, RunRecord, open_store

from .conftest import FakeClock
from .test_contract import ev, new_run, step


async def walk(store: EventStore, limit: int, **filters: object) -> list[RunRecord]:
    """Every page, one after the other, each from the end of the one before."""
    seen: list[RunRecord] = []
    before: tuple[float, str] | None = None
    while True:
        page = await store.list_runs(limit=limit, before=before, **filters)  # type: ignore[arg-type]
        seen.extend(page)
        if len(page) < limit:
            return seen
        before = (page[-1].created_at, page[-1].run_id)
        await asyncio.sleep(0)  # let the writer in between pages


async def fill(store: EventStore, clock: FakeClock, n: int, prefix: str) -> list[str]:
    """`n` runs, three per instant (ties of `created_at` that only `run_id` orders)."""
    ids = []
    for i in range(n):
        run_id = f"{prefix}_{(i * 7919) % n:04d}"  # ids not in creation order
        await store.create_run(
            NewRun(
                run_id=run_id,
                agent=("ops", "dev")[i % 2],
                task_type="triage" if i % 3 else None,
                state=("COMPLETED", "FAILED", "RUNNING")[i % 3],
            )
        )
        ids.append(run_id)
        if i % 3 == 2:
            clock.advance(1)
    return ids


def key(record: RunRecord) -> tuple[float, str]:
    return (record.created_at, record.run_id)


async def test_pages_cover_every_run_once_in_order_while_runs_are_inserted(
    store: EventStore, clock: FakeClock
) -> None:
    before = await fill(store, clock, 95, "run_a")

    async def insert_more() -> list[str]:
        made = []
        for _ in range(10):
            made += await fill(store, clock, 3, f"run_new{len(made):02d}")
            await asyncio.sleep(0)
        return made

    pages, added = await asyncio.gather(walk(store, 7), insert_more())
    listed = [r.run_id for r in pages]
    assert len(set(listed)) == len(listed)  # none twice
    assert set(before) <= set(listed)  # none of those there at the start missed
    assert set(listed) <= set(before) | set(added)
    keys = [key(r) for r in pages]
    assert keys == sorted(keys, reverse=True)
    everything = await store.list_runs(limit=None)
    assert [r.run_id for r in await walk(store, 7)] == [r.run_id for r in everything]


async def test_pages_of_each_filter_are_the_filtered_listing(
    store: EventStore, clock: FakeClock
) -> None:
    await fill(store, clock, 60, "run")
    for filters in (
        {"agent": "ops"},
        {"task_type": "triage"},
        {"state": "FAILED"},
        {"state": ["COMPLETED", "RUNNING"]},
        {"agent": "dev", "state": "RUNNING"},
    ):
        whole = await store.list_runs(limit=None, **filters)  # type: ignore[arg-type]
        assert whole, filters
        paged = await walk(store, 4, **filters)
        assert [r.run_id for r in paged] == [r.run_id for r in whole], filters


def plan(path: Path, where: str, params: tuple[object, ...]) -> str:
    conn = sqlite3.connect(path)
    try:
        sql = f"SELECT run_id FROM runs {where} ORDER BY created_at DESC, run_id DESC LIMIT 51"
        return "; ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    finally:
        conn.close()


async def test_listing_reads_an_index_in_order_without_a_sort(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    async with await open_store(path) as store:
        await store.create_run(NewRun(run_id="run_1", agent="ops", task_type="triage"))
    cursor = "(created_at, run_id) < (?, ?)"
    for where, params, index in (
        ("", (), "runs_by_created"),
        (f"WHERE {cursor}", (1.0, "run_9"), "runs_by_created"),
        ("WHERE state IN (?)", ("COMPLETED",), "runs_listing_by_state"),
        (f"WHERE state IN (?) AND {cursor}", ("FAILED", 1.0, "r"), "runs_listing_by_state"),
        ("WHERE agent = ?", ("ops",), "runs_by_agent"),
        (f"WHERE agent = ? AND {cursor}", ("ops", 1.0, "r"), "runs_by_agent"),
        ("WHERE task_type = ?", ("triage",), "runs_by_task_type"),
        (f"WHERE task_type = ? AND {cursor}", ("triage", 1.0, "r"), "runs_by_task_type"),
    ):
        found = plan(path, where, params)
        assert index in found, (where, found)
        assert "TEMP B-TREE" not in found, (where, found)


async def test_events_of_many_runs_are_counted_by_type(store: EventStore) -> None:
    ids = [f"run_{i:04d}" for i in range(1203)]  # more runs than one statement takes
    for run_id in ids:
        await new_run(store, run_id)
    for n, run_id in enumerate(ids[:3] + ids[-2:]):
        kinds = ["step_started"] * (n + 1) + ["model_called", "hint_injected"]
        await step(store, run_id, *(ev(kind) for kind in kinds))
    counted = await store.count_events(list(reversed(ids)), types=["step_started"])
    assert counted == {run_id: n + 1 for n, run_id in enumerate(ids[:3] + ids[-2:])}
    both = await store.count_events(ids[:2], types=["step_started", "hint_injected"])
    assert both == {ids[0]: 2, ids[1]: 3}
    assert await store.count_events(ids, types=[]) == {}
    assert await store.count_events([], types=["step_started"]) == {}
