"""Step appends per second: group commit against one commit per step.

A step is what the agent loop writes after a tool call: three events and two messages.
Each of R concurrent runs appends its steps one after the other (awaiting each, as the
loop does), so with one run there is never more than one write queued, and with 100 runs
up to 100 steps share a transaction when group commit is on. "per-step" is the same store
with `max_batch=1`: every step is its own transaction.

    python bench/store_append.py [--steps 3000] [--repeat 3] [--postgres URL]

SQLite runs in a temporary directory, with `synchronous=NORMAL` (the default) and `FULL`
(an fsync per commit). PostgreSQL runs too when a URL is given or HARNESS_TEST_POSTGRES is
set; the bench uses (and drops) a schema of its own. Prints a markdown table; the numbers
depend on the machine and its disk.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from harness.core import Message, ToolCall, Usage
from harness.core.events import ModelResponded, ToolCallRef, ToolCompleted, ToolStarted
from harness.store import NewEvent, NewRun, StepWrite
from harness.store._store import SqlStore
from harness.store.sqlite import SQLiteStore

CALL = ToolCall(id="call_1", name="add", arguments='{"a": 2, "b": 3}')
EVENTS = (
    NewEvent(
        payload=ModelResponded(
            step=1,
            finish_reason="tool_calls",
            content="",
            usage=Usage(input_tokens=40, output_tokens=2, requests=1),
            tool_calls=(ToolCallRef(id="call_1", name="add"),),
            duration_s=0.2,
        )
    ),
    NewEvent(payload=ToolStarted(step=1, call_id="call_1", tool="add", arguments="{}")),
    NewEvent(
        payload=ToolCompleted(
            step=1,
            call_id="call_1",
            tool="add",
            status="ok",
            ok=True,
            result="5",
            truncated=False,
            duration_s=0.001,
        )
    ),
)
MESSAGES = (Message.assistant(None, [CALL]), Message.tool("call_1", "5", name="add"))

Opener = Callable[[int], SqlStore]


async def run_steps(store: SqlStore, run_id: str, steps: int) -> None:
    await store.create_run(NewRun(run_id=run_id, agent="bench"))
    for _ in range(steps):
        await store.append(StepWrite(run_id=run_id, events=EVENTS, messages=MESSAGES))


async def measure(open_store: Opener, max_batch: int, runs: int, steps: int) -> float:
    """Seconds for `runs` concurrent runs to append `steps` steps in all."""
    store = open_store(max_batch)
    await store.open()
    try:
        per_run = max(1, steps // runs)
        prefix = uuid.uuid4().hex[:8]
        started = time.perf_counter()
        await asyncio.gather(*(run_steps(store, f"{prefix}_{i}", per_run) for i in range(runs)))
        return time.perf_counter() - started
    finally:
        await store.close()


@asynccontextmanager
async def postgres_schema(url: str) -> AsyncIterator[str]:
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    try:
        yield f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]


async def best(open_store: Opener, max_batch: int, runs: int, steps: int, repeat: int) -> float:
    """The fastest of `repeat` measurements: the machine's noise only ever adds time."""
    return min([await measure(open_store, max_batch, runs, steps) for _ in range(repeat)])


async def table(targets: dict[str, Opener], steps: int, repeat: int) -> None:
    print("| store | runs | commit | steps/s | µs per step | speed-up |")
    print("|---|---:|---|---:|---:|---:|")
    for name, opener in targets.items():
        for runs in (1, 100):
            single = await best(opener, 1, runs, steps, repeat)
            grouped = await best(opener, 256, runs, steps, repeat)
            total = max(1, steps // runs) * runs
            for label, seconds in (("per-step", single), ("group", grouped)):
                speed = f"{single / seconds:.1f}x" if label == "group" else ""
                print(
                    f"| {name} | {runs} | {label} | {total / seconds:,.0f} | "
                    f"{seconds / total * 1e6:,.0f} | {speed} |"
                )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000, help="steps per measurement")
    parser.add_argument("--repeat", type=int, default=3, help="measurements; the best counts")
    parser.add_argument("--postgres", default=os.environ.get("HARNESS_TEST_POSTGRES"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        counter = iter(range(1_000_000))

        def sqlite(synchronous: str) -> Opener:
            def opener(max_batch: int) -> SqlStore:
                path = Path(tmp) / f"bench-{next(counter)}.db"
                return SQLiteStore(path, synchronous=synchronous, max_batch=max_batch)  # type: ignore[arg-type]

            return opener

        targets: dict[str, Opener] = {
            "SQLite NORMAL": sqlite("NORMAL"),
            "SQLite FULL": sqlite("FULL"),
        }
        if not args.postgres:
            await table(targets, args.steps, args.repeat)
            return
        from harness.store.postgres import PostgresStore

        async with postgres_schema(args.postgres) as url:
            targets["PostgreSQL"] = lambda max_batch: PostgresStore(url, max_batch=max_batch)
            await table(targets, args.steps, args.repeat)


if __name__ == "__main__":
    asyncio.run(main())
