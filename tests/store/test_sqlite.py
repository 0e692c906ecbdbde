"""What only the SQLite store does: its file, its pragmas, and another process's lock."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.core.events import StepStarted
from harness.errors import ConfigError
from harness.store import NewEvent, NewRun, StepWrite, StoreError, open_store
from harness.store.sqlite import SQLiteStore


def pragma(path: Path, name: str) -> object:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        conn.close()


def step(run_id: str = "run_1") -> StepWrite:
    return StepWrite(run_id=run_id, events=[NewEvent(payload=StepStarted(step=1))])


async def test_the_file_and_its_directory_are_created_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "home" / "harness.db"
    async with SQLiteStore(path) as store:
        assert repr(store) == f"SQLiteStore({str(path)!r})"
        await store.create_run(NewRun(run_id="run_1", agent="ops"))
    assert pragma(path, "journal_mode") == "wal"


async def test_synchronous_is_normal_unless_asked(tmp_path: Path) -> None:
    seen: dict[str, object] = {}
    for level in ("NORMAL", "FULL"):
        async with SQLiteStore(tmp_path / "h.db", synchronous=level) as store:
            rows = await store._read(lambda db: db.query("PRAGMA synchronous"))  # pyright: ignore[reportPrivateUsage]
            seen[level] = rows[0][0]
    assert seen == {"NORMAL": 1, "FULL": 2}


async def test_a_locked_database_fails_clearly_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "harness.db"
    async with SQLiteStore(path, busy_timeout_s=0.3) as store:
        await store.create_run(NewRun(run_id="run_1", agent="ops"))
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        counting = asyncio.ensure_future(ticker())
        started = time.monotonic()
        try:
            with pytest.raises(StoreError, match=r"harness\.db is locked") as caught:
                await store.append(step())
        finally:
            other.execute("ROLLBACK")
            other.close()
            counting.cancel()
        assert time.monotonic() - started >= 0.25
        assert ticks >= 10  # the event loop went on while the writer waited for the lock
        assert caught.value.retryable
        assert "busy_timeout_s=0.3s" in caught.value.message
        assert await store.events("run_1") == []
        assert [e.seq for e in await store.append(step())] == [1]


async def test_opening_a_locked_database_fails_clearly(tmp_path: Path) -> None:
    path = tmp_path / "harness.db"
    async with SQLiteStore(path):
        pass
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match="locked"):
            await SQLiteStore(path, busy_timeout_s=0.1).open()
    finally:
        other.execute("ROLLBACK")
        other.close()


async def test_a_file_that_is_not_a_database_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "harness.db"
    path.write_text("hello, not sqlite " * 100)
    with pytest.raises(StoreError, match=r"harness\.db failed: file is not a database"):
        await open_store(path)


async def test_a_directory_is_not_a_database(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="unable to open database file"):
        await open_store(tmp_path)


def test_an_in_memory_database_is_refused() -> None:
    with pytest.raises(ConfigError, match="not a file"):
        SQLiteStore(":memory:")


async def test_a_schema_newer_than_this_harness_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "harness.db"
    async with SQLiteStore(path):
        pass
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_migrations VALUES (999, 'from the future', 0)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="version 999, newer than this harness knows"):
        await open_store(path)


async def test_open_store_understands_paths_and_sqlite_urls(tmp_path: Path) -> None:
    for target in (tmp_path / "a.db", str(tmp_path / "b.db"), f"sqlite://{tmp_path}/c.db"):
        store = await open_store(target)
        assert isinstance(store, SQLiteStore)
        await store.close()
    assert sorted(p.name for p in tmp_path.glob("*.db")) == ["a.db", "b.db", "c.db"]
    with pytest.raises(ConfigError, match=r"no store for mysql:// URLs"):
        await open_store("mysql://localhost/x")


def test_sqlite_users_never_load_psycopg(tmp_path: Path) -> None:
    code = (
        "import asyncio, sys, harness.store\n"
        "print('psycopg' in sys.modules)\n"
        "async def main():\n"
        f"    await (await harness.store.open_store({str(tmp_path / 'h.db')!r})).close()\n"
        "asyncio.run(main())\n"
        "print('psycopg' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["False", "False"]


async def test_the_wal_is_checkpointed_by_the_stores_own_thread(tmp_path: Path) -> None:
    """Commits never checkpoint (autocheckpoint is off); the store's thread copies the WAL
    back into the database once it has grown past a few MiB."""
    path = tmp_path / "harness.db"
    async with SQLiteStore(path) as store:
        await store.create_run(NewRun(run_id="run_1", agent="ops"))
        for n in range(12):  # about 6 MiB of results in the WAL
            await store.append(StepWrite(run_id="run_1", blobs={f"b{n}": "x" * (512 << 10)}))
        deadline = time.monotonic() + 30
        while path.stat().st_size < 4 << 20 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert path.stat().st_size >= 4 << 20, "the WAL was never copied into the database"


async def test_a_new_database_has_small_pages_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    sqlite3.connect(old).executescript(
        (Path(__file__).parent / "fixtures" / "store_v1.sql").read_text(encoding="utf-8")
    )
    for path in (tmp_path / "new.db", old):
        async with SQLiteStore(path) as store:
            await store.create_run(NewRun(run_id="run_new", agent="ops"))
            await store.append(step("run_new"))
            assert [e.seq for e in await store.events("run_new")] == [1]
    assert (pragma(tmp_path / "new.db", "page_size"), pragma(old, "page_size")) == (2048, 4096)
