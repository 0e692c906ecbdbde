"""Proof that writes committed in one group: hold the store's writer, count transactions.

`held_writer` keeps the writer of a real store from committing, so that the writes queued
meanwhile are taken in one batch once it lets go. Both stores write on the event loop: on
PostgreSQL another connection holds an advisory lock that a write of the writer's own then
waits for on the server (the writes queued meanwhile form the next batch); on SQLite another
connection holds the database's write lock, so the writer's batch waits for it.
`Transactions` counts the transactions that wrote: on SQLite, the commit frames the WAL
gained (a reader keeps a snapshot open meanwhile, so the WAL cannot restart); on
PostgreSQL, the distinct `xmin` of the event rows written.
"""

from __future__ import annotations

import asyncio
import sqlite3
import struct
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from harness.store import EventStore
from harness.store.sqlite import SQLiteStore


@asynccontextmanager
async def held_writer(store: EventStore) -> AsyncIterator[None]:
    """Writes queued inside the block wait for the writer, and are taken together after."""
    if isinstance(store, SQLiteStore):
        async with _held_lock(store.path):
            yield
        return
    import psycopg

    writer: Any = vars(store)["_writer"]
    target: str = vars(store)["url"]
    with psycopg.connect(target, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", (_HOLD,))
        held = asyncio.ensure_future(
            writer.submit(lambda db: db.execute("SELECT pg_advisory_xact_lock(?)", (_HOLD,)))
        )
        try:
            while not other.execute(  # its batch is formed, and waits: it holds only this
                "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            ).fetchall():
                await asyncio.sleep(0.01)
            yield
        finally:
            other.execute("SELECT pg_advisory_unlock(%s)", (_HOLD,))
            await held


_HOLD = 7_408_346_612_202
"""The advisory lock `held_writer` holds (the store's migrations take ...201)."""


@asynccontextmanager
async def _held_lock(path: Path) -> AsyncIterator[None]:
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield
        other.execute("ROLLBACK")
    finally:
        other.close()


class Transactions:
    """Counts the transactions that wrote events of some runs since it was made."""

    def __init__(self, target: str) -> None:
        self._target = target
        self._sqlite = not target.startswith(("postgres://", "postgresql://"))
        self._reader: sqlite3.Connection | None = None
        self._before = 0
        if self._sqlite:
            self._reader = sqlite3.connect(target, isolation_level=None)
            self._reader.execute("BEGIN")
            self._reader.execute("SELECT count(*) FROM events").fetchall()  # a snapshot
            self._before = _commit_frames(Path(target + "-wal"))

    def count(self, run_ids: Sequence[str]) -> int:
        """Transactions since this was made (SQLite), or among these runs' events (PostgreSQL)."""
        if self._reader is not None:
            frames = _commit_frames(Path(self._target + "-wal")) - self._before
            self._reader.execute("COMMIT")
            self._reader.close()
            return frames
        import psycopg

        with psycopg.connect(self._target) as conn:
            rows = conn.execute(
                "SELECT count(DISTINCT xmin::text) FROM events WHERE run_id = ANY(%s)",
                (list(run_ids),),
            ).fetchall()
        return int(rows[0][0])


def _commit_frames(wal: Path) -> int:
    """Commit frames of the WAL's current generation (frames whose salts match its header)."""
    data = wal.read_bytes()
    if len(data) < 32:
        return 0
    page_size = struct.unpack(">I", data[8:12])[0]
    salts = data[16:24]
    commits, offset = 0, 32
    while offset + 24 + page_size <= len(data) and data[offset + 8 : offset + 16] == salts:
        commits += struct.unpack(">I", data[offset + 4 : offset + 8])[0] != 0
        offset += 24 + page_size
    return commits
