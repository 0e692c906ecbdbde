"""The embedded store: one SQLite file in WAL mode (the only module that imports `sqlite3`).

WAL lets readers work while the writer commits; `synchronous=NORMAL` makes a commit cost
no fsync (a power cut may lose the last commits, never corrupt the file). Writes run on
the event loop's thread, one transaction per iteration of the loop (`LoopWriter`); reads
run on reader threads. Checkpoints (copying the WAL back into the database, with an
fsync) run on a thread of their own rather than inside a commit, so that no step waits
for one. Several processes may open the same file: SQLite serializes their writes; the
loop never waits for another process's lock, its writes try again a little later, for up
to `busy_timeout_s`, before they report the database locked.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, Literal

from harness.core.clock import Clock
from harness.errors import ConfigError
from harness.store._engine import Committer
from harness.store._loop_writer import CommitStats, CommitTimes, LoopWriter
from harness.store._sql import Db, Dialect, Listening, Row
from harness.store._store import SqlStore
from harness.store.errors import StoreConflict, StoreError

__all__ = ["CommitStats", "SQLiteStore"]

_log = logging.getLogger(__name__)

Synchronous = Literal["OFF", "NORMAL", "FULL"]

_DIALECT: Final = Dialect(
    name="sqlite",
    begin="BEGIN IMMEDIATE",
    for_update="",
    skip_locked="",
    serial="INTEGER PRIMARY KEY AUTOINCREMENT",
    lock_schema=None,
)
_MIN_VERSION: Final = (3, 35, 0)  # RETURNING
_CHECKPOINT_EVERY_S: Final = 0.25
_CHECKPOINT_BYTES: Final = 4 << 20  # about SQLite's own threshold of 1000 pages
_IDLE_S: Final = 5.0
"""A smaller WAL that changed is checkpointed after this long, so readers stay quick."""
_WAL_SIZE_LIMIT: Final = 64 << 20
"""After a checkpoint the WAL file is cut back to this size when it had grown beyond."""
_PAGE_SIZE: Final = 2048
"""Bytes per page of a new database (SQLite's default is 4096). Each commit writes every
page it changed whole, and a step changes a few rows of a dozen B-trees: half-size pages
halve those bytes, and a durable run costs about an eighth less CPU in SQLite
(docs/architecture.md). A database made before keeps the size it has."""


class SQLiteStore(SqlStore):
    """The `EventStore` in one SQLite file, created (with its directory) when missing.

    Args:
        path: The database file, e.g. `HARNESS_HOME/harness.db`.
        clock: Time for timestamps and leases.
        busy_timeout_s: How long a write waits for another process's lock (trying again
            every few milliseconds; the event loop goes on meanwhile).
        synchronous: SQLite's `synchronous` pragma; `FULL` syncs every commit to disk (on
            a writer thread, as the loop must not wait for the disk).
        max_batch: Writes per transaction at most; 1 turns group commit off.
        readers: Reader threads (and connections) at most.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Clock | None = None,
        busy_timeout_s: float = 5.0,
        synchronous: Synchronous = "NORMAL",
        max_batch: int = 256,
        readers: int = 2,
    ) -> None:
        self.path = Path(path)
        if str(path) == ":memory:" or self.path.name == "":
            raise ConfigError(
                f"SQLite store path {str(path)!r} is not a file: its connections must share "
                "one database, so give a file path (e.g. HARNESS_HOME/harness.db)"
            )
        driver = _SQLiteDriver(self.path, busy_timeout_s, synchronous)
        self._sqlite = driver
        self._checkpointer: _Checkpointer | None = None
        self._commit_times = CommitTimes()
        super().__init__(driver, clock=clock, max_batch=max_batch, readers=readers)

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    def commit_stats(self, *, since: int = 0) -> CommitStats:
        """How long this store's transactions held the event loop: count, p50, p99, max.

        Cheap to call: it sorts the last 4,096 durations. Zero counts with
        `synchronous=FULL`, whose commits run on a writer thread.

        Args:
            since: Only the transactions after the first `since` (the `count` of an
                earlier call), e.g. those of one burst; of the last 4,096.
        """
        return self._commit_times.stats(since)

    async def open(self) -> None:
        """Connect, bring the schema up to date and start checkpointing; see `SqlStore.open`."""
        await super().open()
        if self._checkpointer is None:
            self._checkpointer = _Checkpointer(self._sqlite)

    async def close(self) -> None:
        """Stop checkpointing, then close as `SqlStore.close` does."""
        checkpointer, self._checkpointer = self._checkpointer, None
        if checkpointer is not None:
            await asyncio.to_thread(checkpointer.stop)
        await super().close()

    async def _start_writer(self) -> Committer:
        """The writer on the event loop's thread, its connection opened on another.

        With `synchronous=FULL` every commit waits for an fsync, too long to hold the loop
        for: those stores keep the writer thread.
        """
        driver = self._sqlite
        if driver.synchronous == "FULL":
            return await super()._start_writer()
        try:
            db = await asyncio.to_thread(driver.connect, busy_timeout_s=0.0)
        except Exception as exc:
            error = driver.translate(exc)
            if error is None:
                raise
            raise error from exc
        return LoopWriter(
            driver,
            db,
            self._commit_times,
            max_batch=self._max_batch,
            lock_wait_s=driver.busy_timeout_s,
        )


class _Checkpointer:
    """A thread that checkpoints the WAL once it has grown, off every commit's path."""

    def __init__(self, driver: _SQLiteDriver) -> None:
        self._driver = driver
        self._wal = driver.path.with_name(driver.path.name + "-wal")
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._main, name="harness-store-checkpoint", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join()

    def _main(self) -> None:
        conn: sqlite3.Connection | None = None
        done: tuple[int, int] | None = None  # the WAL's (size, mtime) at the last checkpoint
        idle = 0.0
        try:
            while not self._stopping.wait(_CHECKPOINT_EVERY_S):
                idle += _CHECKPOINT_EVERY_S
                try:
                    stat = os.stat(self._wal)
                    now = (stat.st_size, stat.st_mtime_ns)
                    # Only a WAL that changed since the last checkpoint, and only once it is
                    # big or has waited a while: its file keeps its size after a checkpoint.
                    if now == done or (stat.st_size < _CHECKPOINT_BYTES and idle < _IDLE_S):
                        continue
                    if conn is None:
                        conn = self._driver.open_connection()
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    done, idle = now, 0.0
                except (OSError, sqlite3.Error):
                    continue  # no WAL yet, or busy: the next round tries again
                except Exception:  # never let the WAL grow unchecked because of a bug
                    _log.exception("checkpointing %s failed; trying again", self._driver.path)
        finally:
            if conn is not None:
                conn.close()


class _SQLiteDb:
    """A `sqlite3` connection as a `Db`.

    Every statement runs on one cursor, made once: `Connection.execute` makes (and
    registers, and later drops) a cursor per statement, a dozen per durable run. Running
    the next statement resets the one before, so none is left in progress at COMMIT.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._cursor = conn.cursor()

    def execute(self, sql: str, params: Sequence[object] = ()) -> None:
        self._cursor.execute(sql, params)

    def query(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        return self._cursor.execute(sql, params).fetchall()

    def usable(self) -> bool:
        return True

    def close(self) -> None:
        self._conn.close()


class _SQLiteDriver:
    def __init__(self, path: Path, busy_timeout_s: float, synchronous: Synchronous) -> None:
        self.path = path
        self.busy_timeout_s = busy_timeout_s
        self.synchronous = synchronous

    @property
    def dialect(self) -> Dialect:
        return _DIALECT

    def connect(self, *, busy_timeout_s: float | None = None) -> Db:
        """A connection; `busy_timeout_s=0` for one that never waits for a lock."""
        if sqlite3.sqlite_version_info < _MIN_VERSION:
            raise StoreError(
                f"SQLite {sqlite3.sqlite_version} is too old for the store: it needs 3.35 "
                "or newer (Debian 12 ships 3.40)"
            )
        conn = self.open_connection()
        if busy_timeout_s is not None:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        return _SQLiteDb(conn)

    def open_connection(self) -> sqlite3.Connection:
        """A connection in WAL mode that leaves checkpoints to the store's own thread."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.path, timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute(f"PRAGMA page_size = {_PAGE_SIZE}")  # only a new, empty file takes it
            self._enter_wal(conn)
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA wal_autocheckpoint = 0")
            conn.execute(f"PRAGMA journal_size_limit = {_WAL_SIZE_LIMIT}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _enter_wal(self, conn: sqlite3.Connection) -> None:
        """Switch to WAL; on a new file several openers race, and SQLite answers BUSY at once.

        That answer skips the busy handler, so wait and retry up to `busy_timeout_s` here.
        """
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if not _is_lock(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def translate(self, exc: Exception) -> StoreError | None:
        if isinstance(exc, sqlite3.IntegrityError):
            return StoreConflict(f"SQLite store {self.path}: {exc}")
        if isinstance(exc, sqlite3.OperationalError) and _is_lock(exc):
            return StoreError(
                f"the SQLite store {self.path} is locked: another process held its write "
                f"lock for more than busy_timeout_s={self.busy_timeout_s:g}s; nothing was "
                "written. Retry, or stop the process that keeps the database busy",
                retryable=True,
            )
        if isinstance(exc, sqlite3.Error):
            return StoreError(f"the SQLite store {self.path} failed: {exc}")
        return None

    def retry_batch(self, exc: Exception) -> bool:
        return False

    def locked(self, exc: Exception) -> bool:
        return isinstance(exc, sqlite3.OperationalError) and _is_lock(exc)

    def listen(self, post: Callable[[str], None], channels: Sequence[str]) -> Listening | None:
        return None  # SQLite has no notifications: waiters poll


def _is_lock(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text
