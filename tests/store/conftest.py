"""Fixtures of the store tests: a fresh store of each kind per test, and a clock to steer.

The PostgreSQL server and its per-test schemas (`postgres`, `postgres_url`) come from the
suite's root conftest, shared with the runtime and CLI tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from harness.store import EventStore, open_store

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


@pytest.fixture
def target(store_target: str) -> str:
    """Where a fresh store lives: a SQLite file, or a PostgreSQL schema."""
    return store_target


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
