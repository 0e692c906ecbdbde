"""Fixtures of the store tests: a fresh store of each kind per test, and a clock to steer.

PostgreSQL comes from HARNESS_TEST_POSTGRES (a URL) or from a throwaway cluster that
`.ci/postgres.sh` starts for the session (never installing anything). Each test gets its
own schema. When no server can be had the PostgreSQL tests skip with the reason, or fail
when HARNESS_REQUIRE_POSTGRES=1 (CI).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.store import EventStore, open_store

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "postgres.sh"
START = 1_700_000_000.0


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, now: float = START) -> None:
        self.time = now

    def now(self) -> float:
        return self.time

    def monotonic(self) -> float:
        return self.time

    def advance(self, seconds: float) -> None:
        self.time += seconds


@dataclass(frozen=True)
class Postgres:
    url: str | None
    reason: str


def _start_cluster(directory: str) -> Postgres:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return Postgres(None, "psycopg is not installed: pip install -e '.[postgres]'")
    if shutil.which("bash") is None:
        return Postgres(None, "bash is needed to run .ci/postgres.sh")
    env = {**os.environ, "HARNESS_PG_NO_INSTALL": "1"}
    done = subprocess.run(
        ["bash", str(SCRIPT), "start", directory],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return Postgres(None, f".ci/postgres.sh could not start PostgreSQL: {detail}")
    return Postgres(done.stdout.strip().splitlines()[-1], "")


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    url = os.environ.get("HARNESS_TEST_POSTGRES")
    if url:
        yield Postgres(url, "")
        return
    directory = tempfile.mkdtemp(prefix="harness-pg-")
    try:
        yield _start_cluster(directory)
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", directory], capture_output=True, check=False)


def require(postgres: Postgres) -> str:
    """The server's URL, or skip (fail in CI) with the reason there is none."""
    if postgres.url is None:
        if os.environ.get("HARNESS_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"HARNESS_REQUIRE_POSTGRES=1 but {postgres.reason}")
        pytest.skip(postgres.reason)
    return postgres.url


@pytest.fixture
def postgres_url(postgres: Postgres) -> Iterator[str]:
    """A URL whose connections use a fresh, empty schema of their own."""
    import psycopg

    base = require(postgres)
    schema = f"test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    try:
        yield f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a fresh store lives: a SQLite file, or a PostgreSQL schema."""
    if request.param == "sqlite":
        return str(tmp_path / "harness.db")
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def store(target: str, clock: FakeClock) -> AsyncIterator[EventStore]:
    opened = await open_store(target, clock=clock)
    try:
        yield opened
    finally:
        await opened.close()
