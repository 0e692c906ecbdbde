"""The store's schema, as an ordered list of migrations that is only ever appended to.

The SQL is shared by SQLite and PostgreSQL; `{id}` stands for each dialect's
auto-numbered primary key. JSON columns hold text written by the core codec, each object
carrying its own schema version, so old rows keep decoding after the codec moves on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from harness.store._sql import Db, Dialect
from harness.store.errors import StoreError

__all__ = ["LATEST_VERSION", "MIGRATIONS", "Migration", "migrate"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Migration:
    """One step of the schema: applied once, in order, never edited after release."""

    version: int
    description: str
    statements: tuple[str, ...]
    dialects: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: {})
    """Statements for one database only (by `Dialect.name`), run after `statements`."""


_RUNS = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    state TEXT NOT NULL,
    task TEXT,
    parent_run_id TEXT,
    model TEXT,
    priority INTEGER NOT NULL DEFAULT 0,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    started_at DOUBLE PRECISION,
    finished_at DOUBLE PRECISION,
    usage TEXT NOT NULL,
    result TEXT,
    termination TEXT,
    error TEXT,
    owner TEXT,
    lease_expires_at DOUBLE PRECISION,
    metadata TEXT NOT NULL,
    last_seq BIGINT NOT NULL DEFAULT 0,
    last_message BIGINT NOT NULL DEFAULT 0
)"""

_EVENTS = """
CREATE TABLE events (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    seq BIGINT NOT NULL,
    ts DOUBLE PRECISION NOT NULL,
    type TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
)"""

_MESSAGES = """
CREATE TABLE messages (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    seq BIGINT NOT NULL,
    role TEXT NOT NULL,
    tool_call_id TEXT,
    tokens BIGINT,
    created_at DOUBLE PRECISION NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
)"""

_BLOBS = """
CREATE TABLE blobs (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    key TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
)"""

_STEP_KEYS = """
CREATE TABLE step_keys (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    key TEXT NOT NULL,
    first_seq BIGINT NOT NULL,
    last_seq BIGINT NOT NULL,
    PRIMARY KEY (run_id, key)
)"""

_AUDIT = """
CREATE TABLE audit (
    id {id},
    run_id TEXT NOT NULL,
    ts DOUBLE PRECISION NOT NULL,
    body TEXT NOT NULL
)"""

_CONTROLS = """
CREATE TABLE controls (
    id {id},
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    kind TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    body TEXT NOT NULL,
    consumed_at DOUBLE PRECISION,
    consumed_by TEXT
)"""

_INBOX = """
CREATE TABLE inbox (
    id {id},
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    sender TEXT NOT NULL,
    sender_run TEXT,
    content TEXT NOT NULL,
    sent_at DOUBLE PRECISION NOT NULL,
    delivered_at DOUBLE PRECISION,
    key TEXT UNIQUE
)"""

_EXPERIMENT_STOPS = """
CREATE TABLE experiment_stops (
    experiment TEXT PRIMARY KEY,
    keep TEXT NOT NULL,
    stopped_by TEXT NOT NULL,
    stopped_at DOUBLE PRECISION NOT NULL
)"""

_DECISIONS = """
CREATE TABLE decisions (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    call_id TEXT NOT NULL,
    approved BOOLEAN NOT NULL,
    decided_by TEXT NOT NULL,
    reason TEXT,
    decided_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, call_id)
)"""

_FEED_CURSORS = """
CREATE TABLE feed_cursors (
    name TEXT PRIMARY KEY,
    tx BIGINT NOT NULL,
    pos BIGINT NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
)"""

_PG_FEED = (
    # The feed's order on PostgreSQL: the writing transaction's id, then a number per row.
    # A reader only takes rows of transactions older than every one still open
    # (`_feed.py`), so a row committed late by an older transaction is never skipped.
    # SQLite needs none of it: one writer at a time, and `rowid` grows in commit order.
    "ALTER TABLE events ADD COLUMN feed_tx BIGINT NOT NULL "
    "DEFAULT (pg_current_xact_id()::text::bigint)",
    "ALTER TABLE events ADD COLUMN feed_pos BIGINT GENERATED ALWAYS AS IDENTITY",
    "CREATE INDEX events_feed ON events (feed_tx, feed_pos)",
)

_SQLITE_AUDIT_REBUILD = (
    # SQLite alters no column's key: the table is copied into one made anew. An
    # INTEGER PRIMARY KEY without AUTOINCREMENT numbers a new row one past the largest
    # id, as AUTOINCREMENT does when no row is ever deleted; it spares every insert a
    # read and a write of sqlite_sequence (one more page in the commit).
    "CREATE TABLE audit_next (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, "
    "ts DOUBLE PRECISION NOT NULL, body TEXT NOT NULL)",
    "INSERT INTO audit_next (id, run_id, ts, body) SELECT id, run_id, ts, body FROM audit",
    "DROP TABLE audit",
    "ALTER TABLE audit_next RENAME TO audit",
    "CREATE INDEX audit_by_run ON audit (run_id, id)",
)

MIGRATIONS: Final[tuple[Migration, ...]] = (
    Migration(
        version=1,
        description="runs, events, messages, blobs, step keys, audit, controls",
        statements=(
            _RUNS,
            "CREATE INDEX runs_by_state ON runs (state, priority, created_at)",
            "CREATE INDEX runs_by_agent ON runs (agent, created_at)",
            "CREATE INDEX runs_by_created ON runs (created_at)",
            "CREATE INDEX runs_by_owner ON runs (owner)",
            _EVENTS,
            _MESSAGES,
            _BLOBS,
            _STEP_KEYS,
            _AUDIT,
            "CREATE INDEX audit_by_run ON audit (run_id, id)",
            _CONTROLS,
            "CREATE INDEX controls_pending ON controls (run_id, consumed_at)",
        ),
    ),
    Migration(
        version=2,
        description="runs.result_data: structured output and stop detail of a result",
        statements=("ALTER TABLE runs ADD COLUMN result_data TEXT",),
    ),
    Migration(
        version=3,
        description="messages.tokens_source: whether tokens was reported or estimated",
        statements=("ALTER TABLE messages ADD COLUMN tokens_source TEXT",),
    ),
    Migration(
        version=4,
        description="decisions: one approve or deny per tool call, compare and set",
        statements=(_DECISIONS,),
    ),
    Migration(
        version=5,
        description="runs.task_type: a label for grouping runs (cost, metrics, traces)",
        statements=(
            "ALTER TABLE runs ADD COLUMN task_type TEXT",
            "CREATE INDEX runs_by_task_type ON runs (task_type, created_at)",
        ),
    ),
    Migration(
        version=6,
        description="runs.trace_parent: the W3C traceparent of the run's span",
        statements=("ALTER TABLE runs ADD COLUMN trace_parent TEXT",),
    ),
    Migration(
        version=7,
        description="runs.experiment and runs.variant; experiment_stops: A/B experiments",
        statements=(
            "ALTER TABLE runs ADD COLUMN experiment TEXT",
            "ALTER TABLE runs ADD COLUMN variant TEXT",
            "CREATE INDEX runs_by_experiment ON runs (experiment, created_at)",
            _EXPERIMENT_STOPS,
        ),
    ),
    Migration(
        version=8,
        description="runs_claim_order: claims read queued runs in their order, without a sort",
        statements=(
            "CREATE INDEX runs_claim_order ON runs (state, priority DESC, created_at, run_id)",
        ),
    ),
    Migration(
        version=9,
        description="fewer index entries per run: runs_claim_order serves every read by state; "
        "task type and experiment indexes hold only the runs that have one",
        statements=(
            "DROP INDEX runs_by_state",
            "DROP INDEX runs_by_task_type",
            "CREATE INDEX runs_by_task_type ON runs (task_type, created_at) "
            "WHERE task_type IS NOT NULL",
            "DROP INDEX runs_by_experiment",
            "CREATE INDEX runs_by_experiment ON runs (experiment, created_at) "
            "WHERE experiment IS NOT NULL",
        ),
    ),
    Migration(
        version=10,
        description="listing runs newest first, whole or by state, agent or task type, in "
        "keyset pages: each index ends with (created_at, run_id), the listing's order",
        statements=(
            "CREATE INDEX runs_listing_by_state ON runs (state, created_at, run_id)",
            "DROP INDEX runs_by_created",
            "CREATE INDEX runs_by_created ON runs (created_at, run_id)",
            "DROP INDEX runs_by_agent",
            "CREATE INDEX runs_by_agent ON runs (agent, created_at, run_id)",
            "DROP INDEX runs_by_task_type",
            "CREATE INDEX runs_by_task_type ON runs (task_type, created_at, run_id) "
            "WHERE task_type IS NOT NULL",
        ),
    ),
    Migration(
        version=11,
        description="run trees: parent_run_id now names the run whose agent-tool call started "
        "this one (its root and depth beside it, and its children's usage); the run a resumed "
        "run continues moves to resumed_from",
        statements=(
            "ALTER TABLE runs RENAME COLUMN parent_run_id TO resumed_from",
            "ALTER TABLE runs ADD COLUMN parent_run_id TEXT",
            "ALTER TABLE runs ADD COLUMN root_run_id TEXT",
            "ALTER TABLE runs ADD COLUMN depth INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE runs ADD COLUMN children_usage TEXT",
            "CREATE INDEX runs_by_parent ON runs (parent_run_id, created_at, run_id) "
            "WHERE parent_run_id IS NOT NULL",
            "CREATE INDEX runs_by_root ON runs (root_run_id, created_at, run_id) "
            "WHERE root_run_id IS NOT NULL",
        ),
    ),
    Migration(
        version=12,
        description="inbox: messages sent to runs, each delivered once with the step that "
        "carries it",
        statements=(
            _INBOX,
            "CREATE INDEX inbox_unread ON inbox (run_id, id) WHERE delivered_at IS NULL",
        ),
    ),
    Migration(
        version=13,
        description="the feed of every run's events in commit order, and a durable cursor "
        "per reader of it (triggers)",
        statements=(_FEED_CURSORS,),
        dialects={"postgresql": _PG_FEED},
    ),
    Migration(
        version=14,
        description="runs.engine: what executes a run, embedded or temporal (a workflow that "
        "embedded processes never claim, adopt or take over)",
        statements=("ALTER TABLE runs ADD COLUMN engine TEXT NOT NULL DEFAULT 'embedded'",),
    ),
    Migration(
        version=15,
        description="controls: an index of those not consumed yet, so that an owner's poll for "
        "its controls reads those only, not one index entry per run it holds",
        statements=(
            "CREATE INDEX controls_unconsumed ON controls (run_id) WHERE consumed_at IS NULL",
        ),
    ),
    Migration(
        version=16,
        description="runs_claim_order holds the queued (PENDING) runs only: a run created "
        "running, and every run once it started, costs no entry there, and a change of "
        "state no rewrite of one; other reads by state use runs_listing_by_state",
        statements=(
            "DROP INDEX runs_claim_order",
            "CREATE INDEX runs_claim_order ON runs (state, priority DESC, created_at, run_id) "
            "WHERE state = 'PENDING'",
        ),
    ),
    Migration(
        version=17,
        description="SQLite: audit ids without AUTOINCREMENT, so that a step with a tool call "
        "no longer rewrites sqlite_sequence (nothing is ever deleted from audit: the ids "
        "are the same)",
        statements=(),
        dialects={"sqlite": _SQLITE_AUDIT_REBUILD},
    ),
)
"""Every migration, oldest first. Add new ones at the end; never change a released one."""

LATEST_VERSION: Final = MIGRATIONS[-1].version

VERSION_TABLE: Final = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at DOUBLE PRECISION NOT NULL
)"""


def migrate(db: Db, d: Dialect, now: float) -> int:
    """Apply every migration the database lacks; returns the schema version.

    Raises:
        StoreError: The database was written by a newer harness.
    """
    if d.lock_schema:
        db.execute(d.lock_schema)
    db.execute(VERSION_TABLE)
    current = int(db.query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")[0][0])
    if current > LATEST_VERSION:
        raise StoreError(
            f"the store's schema is version {current}, newer than this harness knows "
            f"({LATEST_VERSION}): upgrade harness to use it"
        )
    for migration in MIGRATIONS:
        if migration.version <= current:
            continue
        for statement in (*migration.statements, *migration.dialects.get(d.name, ())):
            db.execute(statement.replace("{id}", d.serial))
        db.execute(
            "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)",
            (migration.version, migration.description, now),
        )
    return LATEST_VERSION
