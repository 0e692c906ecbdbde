"""The run store: runs, events, messages, blobs, audit and controls, durable and shared.

`open_store` picks the implementation from a target: a file path or `sqlite:///path` for
the embedded SQLite store, `postgresql://…` for PostgreSQL (psycopg is imported only then).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from harness.errors import ConfigError
from harness.store.errors import StoreConflict, StoreError
from harness.store.protocol import (
    CLAIMABLE_STATES,
    RUN_STATES,
    TERMINAL_STATES,
    Channel,
    Control,
    ControlKind,
    Decision,
    EventStore,
    ExperimentStop,
    InboxMessage,
    NewEvent,
    NewMail,
    NewRun,
    RunRecord,
    RunUpdate,
    StepWrite,
)

if TYPE_CHECKING:
    from harness.core.clock import Clock
    from harness.store._store import SqlStore

__all__ = [
    "CLAIMABLE_STATES",
    "RUN_STATES",
    "TERMINAL_STATES",
    "Channel",
    "Control",
    "ControlKind",
    "Decision",
    "EventStore",
    "ExperimentStop",
    "InboxMessage",
    "NewEvent",
    "NewMail",
    "NewRun",
    "RunRecord",
    "RunUpdate",
    "StepWrite",
    "StoreConflict",
    "StoreError",
    "open_store",
]

_POSTGRES = ("postgresql://", "postgres://")
_SQLITE = "sqlite://"


async def open_store(target: str | os.PathLike[str], *, clock: Clock | None = None) -> EventStore:
    """Open (and migrate) the store at `target`; close it with `await store.close()`.

    Args:
        target: A file path or `sqlite:///abs/path.db` for SQLite, or a
            `postgresql://user@host:port/db` URL for PostgreSQL.
        clock: Time for timestamps and leases.

    Raises:
        ConfigError: `target` names no supported database.
        StoreError: The database cannot be opened or reached.
    """
    store = _store_for(os.fspath(target), clock)
    await store.open()
    return store


def _store_for(target: str, clock: Clock | None) -> SqlStore:
    if target.startswith(_POSTGRES):
        from harness.store.postgres import PostgresStore

        return PostgresStore(target, clock=clock)
    from harness.store.sqlite import SQLiteStore

    if target.startswith(_SQLITE):
        return SQLiteStore(target.removeprefix(_SQLITE), clock=clock)
    if "://" in target:
        scheme = target.split("://", 1)[0]
        raise ConfigError(
            f"no store for {scheme}:// URLs: use a file path, sqlite:///path/to/harness.db "
            "or postgresql://user@host:port/dbname"
        )
    return SQLiteStore(target, clock=clock)
