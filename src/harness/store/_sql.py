"""What the SQL of the store needs from a database: a connection and a dialect.

The store's operations are written once, against `Db`, with `?` placeholders; the SQLite
and PostgreSQL modules adapt their driver to it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, Final, Protocol

from harness.store.errors import StoreError

__all__ = ["Batch", "Db", "Dialect", "Driver", "Listening", "Row", "insert_rows", "marks"]

Row = tuple[Any, ...]
_ROWS_PER_INSERT: Final = 100


class Db(Protocol):
    """One open connection in autocommit mode, used by one thread at a time."""

    def execute(self, sql: str, params: Sequence[object] = ()) -> None:
        """Run one statement."""
        ...

    def query(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        """Run one statement and return every row it produced."""
        ...

    def usable(self) -> bool:
        """False once the connection is broken and must be replaced."""
        ...

    def close(self) -> None:
        """Close the connection."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class Dialect:
    """The few places where the SQL of SQLite and PostgreSQL differ."""

    name: str
    begin: str
    """Starts a write transaction (SQLite takes its write lock at once)."""
    for_update: str
    """Appended to a SELECT that reads a row the transaction will change."""
    skip_locked: str
    """Appended to a SELECT of rows to claim, skipping rows another transaction holds."""
    serial: str
    """DDL of an auto-numbered integer primary key."""
    lock_schema: str | None
    """A statement that keeps two processes from migrating at the same time."""
    notify: str | None = None
    """A query that sends a notification (`channel`, `payload`) at commit, if the database
    has them."""


class Listening(Protocol):
    """A running listener for the notifications of other connections."""

    def stop(self) -> None:
        """Stop listening and close its connection."""
        ...


class Driver(Protocol):
    """Opens connections to one database and explains its errors."""

    @property
    def dialect(self) -> Dialect:
        """The database's dialect."""
        ...

    def connect(self) -> Db:
        """Open a new connection."""
        ...

    def translate(self, exc: Exception) -> StoreError | None:
        """`exc` as a `StoreError`, or `None` when it is not the driver's error."""
        ...

    def retry_batch(self, exc: Exception) -> bool:
        """Whether a transaction that failed with `exc` should run again (a deadlock)."""
        ...

    def listen(self, post: Callable[[str], None], channels: Sequence[str]) -> Listening | None:
        """Start calling `post(channel)` for every notification on `channels`.

        Returns once listening, or `None` when the database has no notifications.
        """
        ...


def marks(count: int) -> str:
    """`?, ?, ?` for `count` parameters."""
    return ", ".join("?" * count)


def insert_rows(db: Db, head: str, rows: Sequence[Sequence[object]], tail: str = "") -> None:
    """`head VALUES (…), (…) tail` for every row, a hundred rows per statement.

    One multi-row INSERT costs one round trip, where psycopg's `executemany` costs several.
    On a `Batch`, plain inserts (no `tail`) wait to be sent together with other writes'.
    """
    if not tail and isinstance(db, Batch):
        db.defer(head, rows)
        return
    for start in range(0, len(rows), _ROWS_PER_INSERT):
        chunk = rows[start : start + _ROWS_PER_INSERT]
        values = _values(len(chunk[0]), len(chunk))
        db.execute(f"{head} VALUES {values}{tail}", list(chain.from_iterable(chunk)))


_VALUES: dict[tuple[int, int], str] = {}
"""`(?, ?), (?, ?)` by columns and rows: the same few shapes come back on every write."""


def _values(columns: int, rows: int) -> str:
    text = _VALUES.get((columns, rows))
    if text is None:
        if len(_VALUES) >= 4096:
            _VALUES.clear()
        text = _VALUES[columns, rows] = ", ".join([f"({marks(columns)})"] * rows)
    return text


class Batch:
    """The connection of a group commit: the inserts of all its writes go out together.

    Rows wait until `flush` (before COMMIT), or until a statement names the table they go
    to, so that every statement still sees every row written before it.

    Args:
        db: The transaction's connection.
    """

    def __init__(self, db: Db) -> None:
        self._db = db
        self._pending: dict[str, list[Sequence[object]]] = {}

    def execute(self, sql: str, params: Sequence[object] = ()) -> None:
        """Run one statement, after the rows it could read."""
        self._flush_for(sql)
        self._db.execute(sql, params)

    def query(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        """Run one statement, after the rows it could read, and return its rows."""
        self._flush_for(sql)
        return self._db.query(sql, params)

    def usable(self) -> bool:
        """Whether the connection still works."""
        return self._db.usable()

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def defer(self, head: str, rows: Sequence[Sequence[object]]) -> None:
        """Keep `rows` for `head` (`INSERT INTO table (columns)`) until the next flush."""
        pending = self._pending.get(head)
        if pending is None:
            self._pending[head] = list(rows)
        else:
            pending.extend(rows)

    def flush(self) -> None:
        """Send every waiting row."""
        pending, self._pending = self._pending, {}
        for head, rows in pending.items():
            insert_rows(self._db, head, rows)

    def _flush_for(self, sql: str) -> None:
        if self._pending and any(_names(sql, _table(head)) for head in self._pending):
            self.flush()


_TABLES: dict[str, str] = {}
"""The table of each `INSERT INTO table (columns)` head: a handful of distinct ones."""


def _table(head: str) -> str:
    table = _TABLES.get(head)
    if table is None:
        if len(_TABLES) >= 4096:
            _TABLES.clear()
        table = _TABLES[head] = head.split()[2]
    return table


_NAMED: dict[tuple[str, str], bool] = {}
"""Whether a statement names a table: the store runs a few hundred distinct statements."""


def _names(sql: str, table: str) -> bool:
    """Whether `sql` names `table` (as a word, in any case)."""
    key = (sql, table)
    named = _NAMED.get(key)
    if named is None:
        if len(_NAMED) >= 4096:
            _NAMED.clear()
        pattern = rf"\b{re.escape(table)}\b"
        named = _NAMED[key] = re.search(pattern, sql, re.IGNORECASE) is not None
    return named
