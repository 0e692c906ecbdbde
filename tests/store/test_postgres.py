"""What only the PostgreSQL store does: reaching a server, and surviving lost connections."""

from __future__ import annotations

import asyncio
import socket
import uuid

import pytest

from harness.core.events import StepStarted
from harness.store import NewEvent, NewRun, StepWrite, StoreError, open_store

psycopg = pytest.importorskip("psycopg", reason="pip install -e '.[postgres]'")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def step() -> StepWrite:
    return StepWrite(run_id="run_1", events=[NewEvent(payload=StepStarted(step=1))])


async def test_an_unreachable_server_is_named_with_what_to_do() -> None:
    port = closed_port()
    with pytest.raises(StoreError) as caught:
        await open_store(f"postgresql://harness:s3cret@127.0.0.1:{port}/runs")
    message = caught.value.message
    assert f"cannot connect to the PostgreSQL store at 127.0.0.1:{port}/runs" in message
    assert "HARNESS_STORE" in message
    assert "harness.toml" in message
    assert "s3cret" not in message
    assert caught.value.retryable


async def test_a_schema_newer_than_this_harness_is_refused(postgres_url: str) -> None:
    async with await open_store(postgres_url):
        pass
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (999, 'from the future', 0)")
    with pytest.raises(StoreError, match="version 999, newer than this harness knows"):
        await open_store(postgres_url)


async def test_connections_killed_by_the_server_are_replaced(postgres_url: str) -> None:
    name = f"harness-{uuid.uuid4().hex[:8]}"
    url = f"{postgres_url}&application_name={name}"
    async with await open_store(url) as store:
        await store.create_run(NewRun(run_id="run_1", agent="ops"))
        assert await store.get_run("run_1") is not None
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (name,),
            ).fetchone()
        assert killed is not None
        assert killed[0] >= 2  # the writer and a reader
        assert [e.seq for e in await store.append(step())] == [1]
        run = await store.get_run("run_1")
        assert run is not None
        assert run.last_seq == 1


async def test_repr_hides_credentials() -> None:
    from harness.store.postgres import PostgresStore

    store = PostgresStore("postgresql://harness:s3cret@db.example:6543/runs")
    assert repr(store) == "PostgresStore('db.example:6543/runs')"


async def test_a_control_sent_by_another_store_wakes_a_waiter_at_once(postgres_url: str) -> None:
    """The wait would last an hour: only the NOTIFY that came with the control ends it."""
    async with await open_store(postgres_url) as owner, await open_store(postgres_url) as other:
        await owner.create_run(NewRun(run_id="run_1", agent="ops"))
        seen = await owner.wait_for_notice("controls", 0, 0.0)
        waiting = asyncio.create_task(owner.wait_for_notice("controls", seen, 3600))
        await other.send_control("run_1", "pause")
        async with asyncio.timeout(30):
            assert await waiting > seen
        events = asyncio.create_task(owner.wait_for_notice("events", 0, 3600))
        await other.append(step())
        async with asyncio.timeout(30):
            assert await events > 0


async def test_news_between_two_waits_is_not_missed(postgres_url: str) -> None:
    async with await open_store(postgres_url) as owner, await open_store(postgres_url) as other:
        await owner.create_run(NewRun(run_id="run_1", agent="ops"))
        seen = await owner.wait_for_notice("controls", 0, 0.0)
        await other.send_control("run_1", "cancel")  # while nobody waits
        async with asyncio.timeout(30):
            while (now := await owner.wait_for_notice("controls", seen, 3600)) == seen:
                pass
        assert now > seen
