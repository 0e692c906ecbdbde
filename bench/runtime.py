"""The durable runtime under load: per-run cost, concurrency, queueing and takeover.

    python bench/runtime.py [--runs 1000] [--concurrent 1000] [--queued 10000] [--takeover 1000]
    python bench/runtime.py --only queued,takeover,memory    # some of the measures
    python bench/runtime.py --store postgres --only loop,concurrent

Scenario of ../shared/bench/peers: model → tool → model with an in-process model; every
event and message of every run is committed to SQLite (WAL) under a scratch HARNESS_HOME,
or with `--store postgres` to a throwaway PostgreSQL cluster that .ci/postgres.sh starts
(as the tests do; `--store postgresql://...` uses a server of yours), a fresh schema per
measure (loop and concurrent only). Prints a markdown table. Numbers depend on the
machine; nothing here is a test.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

from harness import Agent, Harness, Message, ModelRequest, tool
from harness.core.events import RunEvent, RunFinished
from harness.core.states import RunState
from harness.gateway.scripted import FunctionModel, call, reply
from harness.runtime import Settings

ARGS = '{"a": 2, "b": 3}'
ROOT = Path(__file__).resolve().parents[1]


@tool(side_effects="none")
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def agent(latency_s: float) -> Agent:
    async def model(request: ModelRequest) -> Message:
        if latency_s:
            await asyncio.sleep(latency_s)
        last = request.messages[-1]
        return reply(last.content) if last.role == "tool" else reply(None, call("add", ARGS))

    return Agent(name="bench", model=FunctionModel(model, keep_requests=False), tools=[add])


def raw_durable_us(runs: int, home: Path) -> float:
    """The floor: a hand-written loop appending each message as a row (WAL, NORMAL)."""
    db = sqlite3.connect(home / "raw.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE m (run TEXT, seq INTEGER, body TEXT)")
    start = time.perf_counter()
    for n in range(runs):
        messages = [
            {"role": "user", "content": "What is 2 + 3?"},
            {"role": "assistant", "tool_calls": [{"id": "c", "arguments": ARGS}]},
            {"role": "tool", "content": str(2 + 3)},
            {"role": "assistant", "content": "5"},
        ]
        for seq, message in enumerate(messages):
            db.execute("INSERT INTO m VALUES (?, ?, ?)", (f"r{n}", seq, json.dumps(message)))
    db.close()
    return (time.perf_counter() - start) / runs * 1e6


async def sequential_us(runs: int, home: Path, store: str | None = None) -> tuple[float, float]:
    """Wall and CPU (all threads) µs per run, one run after the other."""
    async with Harness(Settings(home=home), store=store, adopt=False) as h:
        bench = agent(0)
        for _ in range(20):
            await h.run(bench, "What is 2 + 3?")
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(runs):
            assert (await h.run(bench, "What is 2 + 3?")).output == "5"
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        return wall / runs * 1e6, cpu / runs * 1e6


async def concurrent_ms(
    runs: int, latency: float, home: Path, store: str | None = None
) -> tuple[float, float, float, tuple[str, dict[str, float]]]:
    """Wall ms, CPU ms (all threads) and RSS growth of a burst, and its commits on the loop."""
    async with Harness(
        Settings(home=home), store=store, max_concurrent=runs, max_queue=runs + 1, adopt=False
    ) as h:
        bench = agent(latency)
        await h.run(bench, "warm up")
        stats = getattr(h.store, "commit_stats", None)
        committed = 0 if stats is None else stats().count  # the burst's commits only
        before = resource.getrusage(resource.RUSAGE_SELF)
        start, cpu = time.perf_counter(), time.process_time()
        with collections() as pauses:
            results = await asyncio.gather(*(h.run(bench, "What is 2 + 3?") for _ in range(runs)))
        wall, cpu = (time.perf_counter() - start) * 1e3, (time.process_time() - cpu) * 1e3
        assert all(r.output == "5" for r in results)
        after = resource.getrusage(resource.RUSAGE_SELF)
        rss = (after.ru_maxrss - before.ru_maxrss) / 1024
        text, values = commit_times(h.store, committed)
        preempted = after.ru_nivcsw - before.ru_nivcsw
        values.update(gc_count=len(pauses), gc_max_ms=max(pauses, default=0.0))
        values.update(involuntary_switches=preempted)
        text += (
            f"; beside them {len(pauses)} collections (longest "
            f"{max(pauses, default=0.0):.1f} ms) and {preempted} preemptions of the process"
        )
        return wall, cpu, rss, (text, values)


@contextlib.contextmanager
def collections() -> Iterator[list[float]]:
    """The wall ms of each collection of the garbage collector while in the block."""
    pauses: list[float] = []
    started = [0.0]

    def timed(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            pauses.append((time.perf_counter() - started[0]) * 1e3)

    gc.callbacks.append(timed)
    try:
        yield pauses
    finally:
        gc.callbacks.remove(timed)


def commit_times(store: object, since: int = 0) -> tuple[str, dict[str, float]]:
    """`count, p50/p99/max ms` of the loop's commits after the first `since`, as values."""
    stats = getattr(store, "commit_stats", None)
    if stats is None:
        return "n/a (this store keeps no commit times)", {}
    s = stats(since=since)
    text = (
        f"{s.count - since} commits, {s.p50_ms:.2f} / {s.p99_ms:.2f} / {s.max_ms:.2f} "
        f"(CPU {s.cpu_p50_ms:.2f} / {s.cpu_p99_ms:.2f} / {s.cpu_max_ms:.2f})"
    )
    values = {"commit_p50_ms": s.p50_ms, "commit_p99_ms": s.p99_ms, "commit_max_ms": s.max_ms}
    values.update(commit_cpu_max_ms=s.cpu_max_ms)
    return text, values


async def queued_s(runs: int, concurrency: int, home: Path) -> tuple[float, float, float]:
    """Queue `runs` runs first, then time one process executing them `concurrency` at a time.

    Returns its wall and CPU seconds (the CPU of this process, threads included: on a
    loaded machine the wall time says more about the neighbours), and the wall seconds
    the submits took (not part of the first).
    """
    submitting = time.perf_counter()
    async with Harness(Settings(home=home), execute=False, max_queue=runs + 1) as h:
        for _ in range(runs):
            await h.submit(agent(0), "What is 2 + 3?")
    submitted = time.perf_counter() - submitting
    start, cpu = time.perf_counter(), time.process_time()
    async with Harness(
        Settings(home=home), agents=(agent(0),), max_concurrent=concurrency
    ) as worker:
        await finished_on_bus(worker, runs)
        took = time.perf_counter() - start, time.process_time() - cpu, submitted
        await all_finished(worker, runs)  # the store agrees, outside the time taken
        return took


async def finished_on_bus(h: Harness, runs: int) -> None:
    """Return once `runs` runs finished, as their committed `run_finished` events say.

    Polling the store's count instead (`all_finished`) costs the process a count of the
    finished runs every 10 ms: over 10,000 runs that grows into a measurable share of
    the CPU measured. Events reach the bus only once committed.
    """
    done, finished = asyncio.Event(), [0]

    def count(event: RunEvent) -> None:
        if isinstance(event.payload, RunFinished):
            finished[0] += 1
            if finished[0] >= runs:
                done.set()

    stop = h.bus.subscribe(count)
    try:  # a look at the store now and then, in case a run finished before the subscription
        while not done.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), 1.0)
            if not done.is_set() and await h.store.count_runs(RunState.COMPLETED) >= runs:
                return
    finally:
        stop()


async def all_finished(h: Harness, runs: int) -> None:
    """Return once `runs` runs are COMPLETED, each with the answer 5."""
    while await h.store.count_runs(RunState.COMPLETED) < runs:  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    done = await h.store.list_runs(state=RunState.COMPLETED, limit=None)
    assert len(done) == runs
    assert all(r.result == "5" for r in done)


async def takeover_s(runs: int, home: Path, *, standby: bool) -> tuple[float, float, float]:
    """Start runs in a process that is then killed; time until another finishes them all.

    The other process is opened after the kill, or (`standby`) is a worker that was open
    and had run a run before it. Returns the seconds from the SIGKILL, from the moment the
    last lease expired, and the CPU seconds of the process that took them over (this one).
    """
    async with (
        Harness(Settings(home=home), execute=False, max_queue=runs + 1) as h,
        contextlib.AsyncExitStack() as stack,
    ):
        for _ in range(runs):
            await h.submit(agent(0), "What is 2 + 3?")
        victim = await _victim(runs, home)
        while len(await h.list(state="running", limit=runs)) < runs:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        heir = await stack.enter_async_context(_heir(runs, home)) if standby else None
        if heir is not None:
            assert (await heir.run(agent(0), "What is 2 + 3?")).output == "5"
        victim.kill()
        await victim.wait()
        killed, wall, cpu = time.time(), time.perf_counter(), time.process_time()
        leases = [r.lease_expires_at or killed for r in await h.list(state="running", limit=runs)]
        expired = max(killed, *leases) - killed
        heir = heir or await stack.enter_async_context(_heir(runs, home))
        await all_finished(heir, runs + standby)
        took = time.perf_counter() - wall
        return took, took - expired, time.process_time() - cpu


def _heir(runs: int, home: Path) -> Harness:
    return Harness(Settings(home=home), agents=(agent(0),), max_concurrent=runs, lease_s=1.0)


async def _victim(runs: int, home: Path) -> asyncio.subprocess.Process:
    """A process that claims the queued runs and parks them in their first model call."""
    here, home_text = str(Path(__file__).parent), str(home)
    script = "\n".join([
        f"import asyncio, sys; sys.path.insert(0, {here!r})",
        "from runtime import agent",
        "from harness import Harness",
        "from harness.runtime import Settings",
        "from pathlib import Path",
        "async def main():",
        f"    settings = Settings(home=Path({home_text!r}))",
        f"    async with Harness(settings, agents=(agent(30),), max_concurrent={runs},",
        "                       lease_s=1.0):",
        "        print('ready', flush=True)",
        "        await asyncio.Event().wait()",
        "asyncio.run(main())",
    ])  # fmt: skip
    victim = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=asyncio.subprocess.PIPE
    )
    assert victim.stdout is not None
    assert (await victim.stdout.readline()).strip() == b"ready"
    return victim


async def parked_kib(runs: int, home: Path) -> tuple[float, float]:
    """Memory per in-flight run: `runs` runs parked in their second model call.

    Returns KiB per run of Python heap (tracemalloc, here) and of RSS (in a fresh process:
    here the heap already grew for the measures before, so RSS would not move).
    """
    heap = await _parked(runs, home, traced=True) / runs / 1024
    child = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--rss-of-parked", str(runs), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await child.communicate()
    return heap, float(out)


async def _parked(runs: int, home: Path, *, traced: bool) -> int:
    gate, parked = asyncio.Event(), [0]

    async def model(request: ModelRequest) -> Message:
        last = request.messages[-1]
        if last.role != "tool":
            return reply(None, call("add", ARGS))
        parked[0] += 1
        await gate.wait()
        return reply(last.content)

    bench = Agent(name="parked", model=FunctionModel(model, keep_requests=False), tools=[add])
    async with Harness(
        Settings(home=home), max_concurrent=runs + 1, max_queue=runs + 1, adopt=False
    ) as h:
        warm = asyncio.ensure_future(h.run(bench, "warm up"))
        while parked[0] < 1:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        gate.set()
        await warm
        gate.clear()
        parked[0] = 0
        gc.collect()
        if traced:
            tracemalloc.start()
        before = _heap() if traced else _rss()
        flights = [asyncio.ensure_future(h.run(bench, "What is 2 + 3?")) for _ in range(runs)]
        while parked[0] < runs:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)  # let every commit of the first step land
        gc.collect()
        grown = (_heap() if traced else _rss()) - before
        tracemalloc.stop()
        gate.set()
        assert all(r.output == "5" for r in await asyncio.gather(*flights))
        return grown


def _heap() -> int:
    return tracemalloc.get_traced_memory()[0]


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


async def rss_of_parked(runs: int) -> None:
    """Print the RSS growth per parked run, in KiB, of this (fresh) process."""
    with tempfile.TemporaryDirectory() as scratch:
        print(await _parked(runs, Path(scratch), traced=False) / runs / 1024)


async def main(args: argparse.Namespace) -> Values:
    """Print the table of the measures asked for; return their values."""
    rows: list[str] = []
    values: dict[str, float | None] = {}
    with tempfile.TemporaryDirectory() as scratch, postgres(args.store, scratch) as server:
        args.server = server
        home = Path(scratch)
        for part in ("loop", "concurrent", "memory", "queued", "takeover"):
            if part in args.only:
                (home / part).mkdir()
                await MEASURES[part](args, home / part, rows, values)
    print("| measure | value |\n|---|---:|")
    for row in rows:
        print(f"| {row} |")
    return values


@contextlib.contextmanager
def postgres(store: str, scratch: str) -> Iterator[str | None]:
    """The PostgreSQL server's URL (a throwaway cluster for `postgres`), or `None` for SQLite."""
    if store == "sqlite":
        yield None
    elif store != "postgres":
        yield store
    else:
        # a directory of its own: the server runs as `postgres`, which cannot enter a
        # root user's 0700 scratch directory
        directory = tempfile.mkdtemp(prefix="bench-pg-", dir=Path(scratch).parent)
        script = ROOT / ".ci" / "postgres.sh"
        started = subprocess.run(
            ["bash", str(script), "start", directory],
            env={**os.environ, "HARNESS_PG_NO_INSTALL": "1"},
            capture_output=True,
            text=True,
            check=False,
        )
        if started.returncode != 0:
            raise SystemExit(f".ci/postgres.sh could not start PostgreSQL: {started.stderr}")
        try:
            yield started.stdout.strip().splitlines()[-1]
        finally:
            subprocess.run(["bash", str(script), "stop", directory], capture_output=True)
            shutil.rmtree(directory, ignore_errors=True)


def fresh_store(args: argparse.Namespace) -> str | None:
    """A store of its own for one measure: a new schema on the server (`None`: SQLite)."""
    if args.server is None:
        return None
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(args.server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    return f"{args.server}{'&' if '?' in args.server else '?'}options=-csearch_path%3D{schema}"


async def _loop(args: argparse.Namespace, home: Path, rows: list[str], values: Values) -> None:
    raw = raw_durable_us(args.runs, home)
    seq, cpu = await sequential_us(args.runs, home, fresh_store(args))
    values.update(raw_us=raw, seq_us=seq, seq_cpu_us=cpu, ratio=seq / raw)
    rows += [
        f"raw durable loop (4 SQLite rows per run), µs/run | {raw:.0f}",
        f"harness durable run (every event and message committed{_on(args)}), µs/run "
        f"(CPU, all threads) | {seq:.0f} ({cpu:.0f})",
        f"ratio to the raw durable loop | {seq / raw:.1f}×",
    ]


def _on(args: argparse.Namespace) -> str:
    return "" if args.server is None else ", PostgreSQL"


async def _burst(args: argparse.Namespace, home: Path, rows: list[str], values: Values) -> None:
    wall, cpu, rss, (commits, times) = await concurrent_ms(
        args.concurrent, args.latency, home, fresh_store(args)
    )
    values.update(times)
    values.update(concurrent_wall_ms=wall, concurrent_cpu_ms=cpu, burst_rss_mib=rss)
    rows += [
        f"{args.concurrent:,} concurrent durable runs{_on(args)}, {args.latency * 1e3:.0f} ms "
        f"model latency: wall ms (floor {2 * args.latency * 1e3:.0f}) | {wall:.0f}",
        f"CPU of that burst (all threads), ms / µs per run | {cpu:.0f} / "
        f"{cpu / args.concurrent * 1e3:.0f}",
        f"RSS growth during that burst, MiB | {rss:.1f}",
        f"commits holding the loop in that burst: wall p50 / p99 / max ms | {commits}",
    ]


async def _memory(args: argparse.Namespace, home: Path, rows: list[str], values: Values) -> None:
    heap, rss = await parked_kib(args.concurrent, home)
    values.update(parked_heap_kib=heap, parked_rss_kib=rss)
    rows.append(
        f"memory per in-flight run ({args.concurrent:,} parked mid-run), KiB/run: "
        f"Python heap (tracemalloc) / RSS | {heap:.1f} / {rss:.1f}"
    )


async def _queued(args: argparse.Namespace, home: Path, rows: list[str], values: Values) -> None:
    wall, cpu, submitted = await queued_s(args.queued, 100, home)
    values.update(queued_s=wall, queued_cpu_s=cpu, queued_submit_s=submitted)
    rows.append(
        f"{args.queued:,} runs queued, then executed 100 at a time: wall s (CPU s) | "
        f"{wall:.2f} ({cpu:.2f})"
    )
    rows.append(
        f"submitting those {args.queued:,} runs into the queue, µs per submit | "
        f"{submitted / args.queued * 1e6:,.0f}"
    )


async def _takeover(args: argparse.Namespace, home: Path, rows: list[str], values: Values) -> None:
    """Both ways; the JSON's `takeover_*` keys are the standby worker's (a deployment's)."""
    for standby, name, key in (
        (False, "opened after the kill", "takeover_cold"),
        (True, "open, on standby", "takeover"),
    ):
        took, after_lease, cpu = await takeover_s(args.takeover, home / key, standby=standby)
        values.update({f"{key}_s": took, f"{key}_after_lease_s": after_lease})
        values[f"{key}_cpu_s"] = cpu
        rows.append(
            f"takeover of {args.takeover:,} in-flight runs after a SIGKILL (lease 1 s) "
            f"by a worker {name}: s to finish them all, from the kill / from the last "
            f"lease's expiry (CPU s) | {took:.2f} / {after_lease:.2f} ({cpu:.2f})"
        )


Values = dict[str, float | None]
MEASURES: dict[str, Callable[[argparse.Namespace, Path, list[str], Values], Awaitable[None]]] = {
    "loop": _loop,
    "concurrent": _burst,
    "memory": _memory,
    "queued": _queued,
    "takeover": _takeover,
}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--concurrent", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--queued", type=int, default=10_000)
    parser.add_argument("--takeover", type=int, default=1000)
    parser.add_argument(
        "--only",
        type=lambda text: set(text.split(",")),
        default={"loop", "concurrent", "memory", "queued", "takeover"},
        help="comma-separated: loop, concurrent, memory, queued, takeover",
    )
    parser.add_argument(
        "--store",
        default="sqlite",
        help="sqlite, postgres (a throwaway cluster: loop and concurrent only) or a URL",
    )
    parser.add_argument("--json", help="also write every value to this file, as JSON")
    parser.add_argument("--rss-of-parked", type=int, default=0, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.store != "sqlite" and options.only - {"loop", "concurrent"}:
        parser.error("--store other than sqlite measures only: --only loop,concurrent")
    if options.rss_of_parked:
        asyncio.run(rss_of_parked(options.rss_of_parked))
    else:
        measured = asyncio.run(main(options))
        if options.json:
            Path(options.json).write_text(json.dumps(measured, indent=1))
