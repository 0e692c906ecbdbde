"""The schema only grows: released migrations never change, and old stores keep reading."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from harness.core import Message, Usage
from harness.core.events import RunSubmitted, StepStarted
from harness.store import Decision, NewEvent, NewRun, RunUpdate, StepWrite, open_store
from harness.store._leases import claim_sql
from harness.store._schema import LATEST_VERSION, MIGRATIONS

from .conftest import START
from .test_contract import CONVERSATION

FIXTURES = Path(__file__).parent / "fixtures"

RELEASED = {
    1: "1c320823fa28369fb50af4706a58b671b15177102050e4405695e42a8b9eefe5",
    2: "8837d38199159d4e5af502ae4d7cfa2c6e1116078945d4660c75a7fec1a6d184",
    3: "6ddf72ff025374a433a0126be77865bd22c9ed023f4f5b9a09307f538fe03b80",
    4: "07efe5ceb1875d0e4dfbae3410eab96b074b6e6a5f5c48b6dce2c5bcce5fd60e",
    5: "a508b501c7f8f0ebee0dfe9d8291c9149378ce08db380311375810d574bb6f1d",
    6: "d7520d86ce73404a78d045605fba4e07f7626ce63dfa183cff3e730418d17d6d",
    7: "5718863eb7a35198d8135bcf5e6622e706b11e3f280e5f53d664dafd5684b6cd",
    8: "102f82946b4770b5df61f442bb1eee437e9724f865743a62ffb778f6c0f73fe8",
    9: "0653b41c78e01b768970a0c35a6b9fa8159c862c79f61ded8e9d74262b5b2b3b",
    10: "44e393a422b842802e01449fa8f842b3d618b419c99ee9b5501bb383788d8b3d",
    11: "7ff137f592f9d0964ada69d818837b815a135cd899e5c5cd2d1e89bad6d93129",
}
"""sha256 of each released migration's statements. Add a line for a new migration; never
edit one: a database that applied the old statements would not be migrated again."""


def fingerprint(version: int) -> str:
    statements = MIGRATIONS[version - 1].statements
    return hashlib.sha256("\n;\n".join(statements).encode()).hexdigest()


def test_migrations_are_numbered_from_one_without_gaps() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    assert LATEST_VERSION == len(MIGRATIONS)


def test_released_migrations_never_change() -> None:
    assert {v: fingerprint(v) for v in RELEASED} == RELEASED


async def test_a_continued_run_of_an_old_store_names_it_in_resumed_from(tmp_path: Path) -> None:
    """Migration 11 moved "the run this one continues" from parent_run_id to resumed_from."""
    path = tmp_path / "harness.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "store_v1.sql").read_text(encoding="utf-8"))
    conn.execute(
        "INSERT INTO runs SELECT 'run_again', agent, 'PENDING', task, 'run_v1', model, priority,"
        " created_at, updated_at, NULL, NULL, usage, NULL, NULL, NULL, NULL, NULL, metadata,"
        " 0, 0 FROM runs WHERE run_id = 'run_v1'"
    )
    conn.commit()
    conn.close()
    async with await open_store(path) as store:
        again = await store.get_run("run_again")
        first = await store.get_run("run_v1")
    assert again is not None
    assert first is not None
    assert (again.resumed_from, again.parent_run_id, again.root, again.depth) == (
        "run_v1",
        None,
        "run_again",
        0,
    )
    assert (first.resumed_from, first.parent_run_id, first.children_usage) == (None, None, Usage())


async def test_a_store_written_by_schema_1_reads_and_writes_today(tmp_path: Path) -> None:
    path = tmp_path / "harness.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "store_v1.sql").read_text(encoding="utf-8"))
    conn.close()
    async with await open_store(path) as store:
        assert await store.schema_version() == LATEST_VERSION
        run = await store.get_run("run_v1")
        assert run is not None
        assert (run.state, run.result, run.termination, run.last_seq) == (
            "COMPLETED",
            "12 files.",
            "final_answer",
            5,
        )
        assert run.usage == Usage(
            input_tokens=120, output_tokens=35, requests=2, tool_calls=2, cost_usd=0.001
        )
        assert (run.created_at, run.started_at, run.finished_at) == (START, START + 1, START + 3)
        assert run.metadata == {"limits": {"max_steps": 5}}
        assert run.result_data is None  # the column came with schema 2
        assert run.trace_parent is None  # and this one with schema 5
        assert await store.messages("run_v1") == CONVERSATION
        events = await store.events("run_v1")
        assert [(e.seq, e.type) for e in events] == [
            (1, "run_submitted"),
            (2, "run_started"),
            (3, "model_responded"),
            (4, "tool_completed"),
            (5, "run_finished"),
        ]
        assert events[0].payload == RunSubmitted(
            agent="ops", task="count the files", parent_run_id=None
        )
        assert await store.get_blob("run_v1", "c1") == "12\n"
        assert await store.audit("run_v1") == [{"call_id": "c1", "tool": "bash", "approved": True}]
        assert [c.payload for c in await store.take_controls(run_id="run_v1")] == [{"by": "cli"}]
        again = await store.append(
            StepWrite(
                run_id="run_v1",
                events=[NewEvent(payload=StepStarted(step=1))],
                key="step-1-attempt-1",
            )
        )
        assert [e.seq for e in again] == [3, 4]
        assert await store.send_control("run_v1", "cancel") == 2
        await store.append(
            StepWrite(run_id="run_v1", update=RunUpdate(result_data={"output_valid": True}))
        )
        updated = await store.get_run("run_v1")
        assert updated is not None
        assert updated.result_data == {"output_valid": True}
        assert await store.decisions("run_v1") == []  # the table came with schema 4
        assert (
            await store.decide(Decision(run_id="run_v1", call_id="c9", approved=True, by="x"))
            is None
        )
        counted = Message(role="user", content="hi", tokens=2, tokens_source="estimated")
        await store.append(StepWrite(run_id="run_v1", messages=[counted]))
        assert (await store.messages("run_v1"))[-1] == counted  # schema 3's column


def plans(path: Path, statements: list[tuple[str, tuple[object, ...]]]) -> list[str]:
    """SQLite's query plan of each statement, its steps joined by `; `."""
    conn = sqlite3.connect(path)
    try:
        return [
            "; ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
            for sql, params in statements
        ]
    finally:
        conn.close()


def new_and_migrated(tmp_path: Path) -> tuple[Path, Path]:
    """A database file to be made anew, and one of schema 1 to be migrated when opened."""
    old = tmp_path / "old.db"
    sqlite3.connect(old).executescript((FIXTURES / "store_v1.sql").read_text(encoding="utf-8"))
    return tmp_path / "new.db", old


async def test_reads_by_state_task_type_and_experiment_use_the_remaining_indexes(
    tmp_path: Path,
) -> None:
    for path in new_and_migrated(tmp_path):
        async with await open_store(path) as store:
            await store.create_run(NewRun(run_id="run_t", agent="ops", task_type="triage"))
            assert [r.run_id for r in await store.list_runs(task_type="triage")] == ["run_t"]
        found = plans(
            path,
            [
                ("SELECT count(*) FROM runs WHERE state IN (?, ?)", ("PENDING", "RUNNING")),
                (claim_sql(["PENDING"], None), ("w1", 0.0, 5)),
                ("SELECT run_id FROM runs WHERE task_type = ?", ("triage",)),
                ("SELECT run_id FROM runs WHERE experiment = ?", ("ab",)),
            ],
        )
        assert "runs_claim_order" in found[1], found
        # a count by state reads a state index: the claim order's, or (smaller) the listing's
        assert any(i in found[0] for i in ("runs_claim_order", "runs_listing_by_state")), found
        assert "runs_by_task_type" in found[2], found
        assert "runs_by_experiment" in found[3], found
        assert "TEMP B-TREE" not in found[1], found  # claims read in order, no sort


async def test_the_claim_order_index_holds_the_queued_runs_only_and_serves_every_claim(
    tmp_path: Path,
) -> None:
    for path in new_and_migrated(tmp_path):
        async with await open_store(path) as store:
            await store.create_run(NewRun(run_id="run_q", agent="ops"))
            await store.create_run(
                NewRun(run_id="run_r", agent="ops", state="RUNNING", owner="w0", lease_s=5)
            )
            claimed = await store.claim("w1", lease_s=5, states=["PENDING"])
            assert [r.run_id for r in claimed] == ["run_q"]
        conn = sqlite3.connect(path)
        try:
            index = conn.execute(
                "SELECT sql FROM sqlite_schema WHERE name = 'runs_claim_order'"
            ).fetchone()[0]
            # a partial index cannot serve a query that may want other rows
            with pytest.raises(sqlite3.OperationalError, match="no query solution"):
                conn.execute("SELECT run_id FROM runs INDEXED BY runs_claim_order").fetchall()
        finally:
            conn.close()
        assert index.endswith("WHERE state = 'PENDING'"), index
        unfinished = ["PENDING", "RUNNING", "WAITING_TOOL"]
        found = plans(
            path,
            [
                (claim_sql(["PENDING"], None), ("w1", 0.0, 5)),
                (claim_sql(["PENDING"], 2), ("w1", 0.0, "run_a", "run_b", 5)),
                (claim_sql(unfinished, 2), ("w1", 0.0, "run_a", "run_b", 5)),
                ("SELECT count(*) FROM runs WHERE state IN (?)", ("PENDING",)),
                (
                    "SELECT MIN(lease_expires_at) FROM runs WHERE state IN (?, ?, ?) "
                    "AND owner <> ? AND lease_expires_at > ?",
                    (*unfinished, "w1", 0.0),
                ),
            ],
        )
        assert "runs_claim_order" in found[0], found
        assert "TEMP B-TREE" not in found[0], found  # the queue is read in order, no sort
        assert all("USING" in plan and "SCAN runs" not in plan for plan in found), found


async def test_audit_records_keep_their_ids_and_order_without_autoincrement(
    tmp_path: Path,
) -> None:
    path = tmp_path / "harness.db"
    sqlite3.connect(path).executescript((FIXTURES / "store_v1.sql").read_text(encoding="utf-8"))
    async with await open_store(path) as store:
        await store.record_audit("run_v1", {"call_id": "c2", "tool": "ls", "approved": False})
        assert await store.audit("run_v1") == [
            {"call_id": "c1", "tool": "bash", "approved": True},
            {"call_id": "c2", "tool": "ls", "approved": False},
        ]
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT id FROM audit ORDER BY id").fetchall() == [(1,), (2,)]
        schema = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'audit'").fetchone()[0]
        sequences = conn.execute("SELECT name FROM sqlite_sequence").fetchall()
        audit_plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT body FROM audit WHERE run_id = ? ORDER BY id", ("r",)
        ).fetchall()
    finally:
        conn.close()
    assert "AUTOINCREMENT" not in schema
    assert ("audit",) not in sequences  # an audit record no longer writes sqlite_sequence
    assert "audit_by_run" in audit_plan[0][3]
