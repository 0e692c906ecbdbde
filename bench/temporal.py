"""Temporal's cost: the engine's own floor, and a harness run on Temporal against embedded.

    python bench/temporal.py [--runs 20] [--activities 10] [--concurrent 100]
    python bench/temporal.py --only floor          # the engine alone (no harness run)
    python bench/temporal.py --address 127.0.0.1:7233   # a server of yours, not a new one

It starts its own Temporal dev server (DevServer: 127.0.0.1, a free port, a scratch SQLite
file with the WAL pragmas) unless --address is given, and prints a markdown table.

- floor: a workflow of N no-op activities (bench/_temporal_floor.py) against one of none,
  run one after the other on one worker: the engine's overhead per activity is the
  difference of the medians over N (research/distributed.md measured ≈ 50 ms; the target of
  issue 17 is ≤ 60 ms). Then `--concurrent` such workflows at once: activities per second.
- harness: the scenario of bench/runtime.py (model → tool → model, an in-process model) as a
  harness run, embedded and on Temporal, interleaved in rounds, medians of each; the
  difference per run, per model step and per activity of the run's workflow (counted in
  its history). Then `--concurrent` runs at once on each.

CPU is this process's (client, worker, store) and the dev server's (from /proc), per run or
per activity. Numbers depend on the machine and its load; nothing here is a test.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _temporal_floor import NoopRun, NoopRunPlain, noop

from harness import Agent, Harness, Message, ModelRequest, tool
from harness.distributed.temporal.devserver import DevServer, DevServerConfig
from harness.gateway.scripted import FunctionModel, call, reply
from harness.runtime import Settings
from harness.runtime.runtime_settings import RuntimeSettings

ARGS = '{"a": 2, "b": 3}'
TICKS = os.sysconf("SC_CLK_TCK")
Row = tuple[str, str, str, str]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Cpu:
    """CPU seconds of this process and of the server's process, since `start`."""

    def __init__(self, server_pid: int | None) -> None:
        self.server_pid = server_pid
        self.ours = self.theirs = 0.0

    def _server(self) -> float:
        if self.server_pid is None:
            return 0.0
        fields = Path(f"/proc/{self.server_pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def start(self) -> Cpu:
        self.ours, self.theirs = time.process_time(), self._server()
        return self

    def stop(self) -> tuple[float, float]:
        return time.process_time() - self.ours, self._server() - self.theirs


async def timed(make: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await make()
    return time.perf_counter() - start


# --- the engine's floor ---------------------------------------------------------------------


async def floor(address: str, server_pid: int | None, args: argparse.Namespace) -> list[Row]:
    client = await Client.connect(address)
    queue = f"bench-floor-{uuid.uuid4().hex[:8]}"
    worker = Worker(
        client,
        task_queue=queue,
        workflows=[NoopRun, NoopRunPlain],
        activities=[noop],
        max_concurrent_activities=args.concurrent,
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=2),
    )
    rows: list[Row] = []
    async with worker:
        for kind, sandboxed in (("sandboxed", NoopRun), ("not sandboxed", NoopRunPlain)):

            def one(n: int, wf: Any = sandboxed) -> Callable[[], Awaitable[Any]]:
                return lambda: client.execute_workflow(
                    wf.run, n, id=f"floor-{uuid.uuid4().hex}", task_queue=queue
                )

            rows += await _floor_rows(kind, one, server_pid, args)
    return rows


async def _floor_rows(
    kind: str,
    one: Callable[[int], Callable[[], Awaitable[Any]]],
    server_pid: int | None,
    args: argparse.Namespace,
) -> list[Row]:
    for _ in range(3):
        await one(args.activities)()
    empty: list[float] = []
    full: list[float] = []
    cpu = Cpu(server_pid).start()
    for _ in range(args.runs):
        empty.append(await timed(one(0)))
        full.append(await timed(one(args.activities)))
    ours, theirs = cpu.stop()
    done = args.runs * args.activities
    per = (statistics.median(full) - statistics.median(empty)) / args.activities
    burst, n = args.concurrent, 3
    cpu.start()
    wall = await timed(lambda: asyncio.gather(*(one(n)() for _ in range(burst))))
    b_ours, b_theirs = cpu.stop()
    return [
        (
            f"engine floor ({kind}): workflow of {args.activities} no-op activities, median",
            f"{statistics.median(full) * 1e3:.0f} ms",
            f"none: {statistics.median(empty) * 1e3:.0f} ms",
            f"**{per * 1e3:.1f} ms per activity**",
        ),
        (
            f"engine floor ({kind}): CPU per activity (this process / dev server)",
            f"{ours / done * 1e3:.1f} ms",
            f"{theirs / done * 1e3:.1f} ms",
            "(with the empty workflows)",
        ),
        (
            f"engine floor ({kind}): {burst} workflows × {n} no-op activities at once",
            f"{wall:.2f} s",
            f"{burst / wall:.1f} workflows/s",
            f"{burst * n / wall:.0f} activities/s; CPU {b_ours / (burst * n) * 1e3:.1f} + "
            f"{b_theirs / (burst * n) * 1e3:.1f} ms per activity",
        ),
    ]


# --- a harness run, embedded and on Temporal ------------------------------------------------


@tool(side_effects="none")
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def agent(steps: int = 1) -> Agent:
    """Calls `add` in `steps` model steps, then answers with its last result."""

    async def model(request: ModelRequest) -> Message:
        calls = sum(1 for m in request.messages if m.role == "tool")
        if calls < steps:
            return reply(None, call("add", ARGS))
        return reply(request.messages[-1].content)

    name = "bench" if steps == 1 else f"bench{steps}"
    return Agent(name=name, model=FunctionModel(model, keep_requests=False), tools=[add])


async def one_run(h: Harness, bench: Agent) -> None:
    result = await h.wait(await h.submit(bench, "What is 2 + 3?"), timeout=120)
    assert result.output == "5", result


async def one_workflow(h: Harness, bench: Agent, client: Client | None) -> float:
    """Submit, await the run's workflow result (as the engine delivers it), then `wait`;
    returns the seconds to the workflow's result."""
    start = time.perf_counter()
    run_id = await h.submit(bench, "What is 2 + 3?")
    if client is not None:
        await client.get_workflow_handle(run_id).result()
    engine = time.perf_counter() - start
    assert (await h.wait(run_id, timeout=120)).output == "5"
    return engine


async def burst(h: Harness, bench: Agent, runs: int, client: Client | None) -> None:
    ids = await asyncio.gather(*(h.submit(bench, "What is 2 + 3?") for _ in range(runs)))
    if client is not None:
        await asyncio.gather(*(client.get_workflow_handle(i).result() for i in ids))
    results = await asyncio.gather(*(h.wait(i, timeout=600) for i in ids))
    assert all(r.output == "5" for r in results)


async def activities_of(client: Client, run_id: str) -> int:
    history = await client.get_workflow_handle(run_id).fetch_history()
    return sum(1 for e in history.events if e.HasField("activity_task_scheduled_event_attributes"))


async def harness_rows(
    address: str, server_pid: int | None, args: argparse.Namespace, home: Path
) -> list[Row]:
    runtime = RuntimeSettings(
        backend="temporal", temporal_address=address, task_queue=f"bench-{uuid.uuid4().hex[:8]}"
    )
    limits = {"max_concurrent": args.concurrent, "max_queue": args.concurrent * 10}
    bench = agent()
    async with (
        Harness(Settings(home=home / "embedded"), adopt=False, **limits) as emb,
        Harness(Settings(home=home / "temporal", runtime=runtime), **limits) as tmp,
    ):
        for h in (emb, tmp):
            for _ in range(3):
                await one_run(h, bench)
        client = await Client.connect(address)
        times: dict[str, list[float]] = {"embedded": [], "temporal": [], "wait": []}
        cpu: dict[str, list[tuple[float, float]]] = {"embedded": [], "temporal": []}
        rounds = 4
        for _ in range(rounds):
            meter = Cpu(server_pid).start()
            for _ in range(max(1, args.runs // rounds)):
                times["embedded"].append(await timed(lambda: one_run(emb, bench)))
            cpu["embedded"].append(meter.stop())
            meter.start()
            for _ in range(max(1, args.runs // rounds)):
                times["temporal"].append(await one_workflow(tmp, bench, client))
                times["wait"].append(await timed(lambda: one_run(tmp, bench)))
            cpu["temporal"].append(meter.stop())
        last = (await tmp.list(limit=1))[0].run_id
        per_run_activities = await activities_of(client, last)
        slope = await step_slope(emb, tmp, client, args)
        walls = {
            "embedded": await timed(lambda: burst(emb, bench, args.concurrent, None)),
            "temporal": await timed(lambda: burst(tmp, bench, args.concurrent, client)),
        }
    return [*_harness_table(times, cpu, walls, per_run_activities, args), slope]


async def step_slope(emb: Harness, tmp: Harness, client: Client, args: argparse.Namespace) -> Row:
    """Runs of 1 and of 6 model steps (each a model call and a tool call), interleaved:
    the difference of the medians per extra step, on each backend."""
    short, long = agent(1), agent(6)
    times: dict[tuple[str, int], list[float]] = {}
    for _ in range(max(2, args.runs // 4)):
        for name, h, c in (("embedded", emb, None), ("temporal", tmp, client)):
            for steps, bench in ((1, short), (6, long)):
                times.setdefault((name, steps), []).append(await one_workflow(h, bench, c))
    per = {
        name: (statistics.median(times[name, 6]) - statistics.median(times[name, 1])) / 5
        for name in ("embedded", "temporal")
    }
    return (
        "per extra model step (model call + tool call: 2 activities), slope over 1 → 6 steps",
        f"{per['embedded'] * 1e3:.1f} ms",
        f"{per['temporal'] * 1e3:.0f} ms",
        f"**+{(per['temporal'] - per['embedded']) / 2 * 1e3:.0f} ms per activity**",
    )


def _harness_table(
    times: dict[str, list[float]],
    cpu: dict[str, list[tuple[float, float]]],
    walls: dict[str, float],
    activities: int,
    args: argparse.Namespace,
) -> list[Row]:
    emb, tmp = statistics.median(times["embedded"]), statistics.median(times["temporal"])
    waited = statistics.median(times["wait"])
    extra = tmp - emb
    runs = len(times["embedded"])
    ours = {name: sum(c[0] for c in cpu[name]) / runs * 1e3 for name in cpu}
    server = sum(c[1] for c in cpu["temporal"]) / (2 * runs) * 1e3
    n = args.concurrent
    return [
        (
            "harness run (model → tool → model), median wall to the result",
            f"{emb * 1e3:.1f} ms",
            f"{tmp * 1e3:.0f} ms",
            f"+{extra * 1e3:.0f} ms per run",
        ),
        (
            "… per model step (2 per run)",
            f"{emb / 2 * 1e3:.1f} ms",
            f"{tmp / 2 * 1e3:.0f} ms",
            f"+{extra / 2 * 1e3:.0f} ms per step",
        ),
        (
            f"… per activity ({activities} activities per run's workflow)",
            "-",
            f"{tmp / activities * 1e3:.0f} ms",
            f"**+{extra / activities * 1e3:.0f} ms per activity**",
        ),
        (
            "same run, submit → `Harness.wait` returns",
            f"{emb * 1e3:.1f} ms",
            f"{waited * 1e3:.0f} ms",
            f"+{(waited - emb) * 1e3:.0f} ms per run",
        ),
        (
            "CPU per run (this process / dev server)",
            f"{ours['embedded']:.1f} ms",
            f"{ours['temporal'] / 2:.0f} ms / {server:.0f} ms",
            "",
        ),
        (
            f"{n} runs at once: wall, runs/s",
            f"{walls['embedded']:.2f} s, {n / walls['embedded']:.0f}/s",
            f"{walls['temporal']:.2f} s, {n / walls['temporal']:.1f}/s",
            f"{walls['temporal'] / walls['embedded']:.0f}× the wall",
        ),
    ]


# --- main -----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=20, help="sequential runs per measure")
    parser.add_argument("--activities", type=int, default=10, help="no-op activities (floor)")
    parser.add_argument("--concurrent", type=int, default=100, help="runs at once")
    parser.add_argument("--only", default="floor,harness", help="floor, harness or both")
    parser.add_argument("--address", help="a Temporal server of yours (default: start one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-temporal-") as scratch:
        home = Path(scratch)
        if args.address:
            rows = asyncio.run(measure(args.address, None, args, home))
        else:
            config = DevServerConfig(db_filename=home / "temporal.db", port=free_port())
            with DevServer(config) as server:
                rows = asyncio.run(measure(server.address, server.pid, args, home))
    print("| measure | embedded / A | Temporal / B | engine overhead |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


async def measure(
    address: str, server_pid: int | None, args: argparse.Namespace, home: Path
) -> list[Row]:
    only = set(args.only.split(","))
    rows: list[Row] = []
    if "floor" in only:
        rows += await floor(address, server_pid, args)
    if "harness" in only:
        rows += await harness_rows(address, server_pid, args, home)
    return rows


if __name__ == "__main__":
    main()
