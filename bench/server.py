"""`harness serve` under load: SSE subscribers on one run, and listing 100,000 runs.

    python bench/server.py [--subscribers 200] [--steps 30] [--latency 0.1] [--repeat 3]
                           [--runs 100000] [--queries 100] [--store sqlite|postgres]
                           [--only sse|list]

(a) One run of `--steps` steps (a tool call each, then an answer) executes in a real
`harness serve` on 127.0.0.1; its model is a FakeOpenAIServer in this process that answers
each call after `--latency` seconds. The run is timed with no subscriber and with
`--subscribers` SSE clients on `/api/runs/{id}/events`, interleaved `--repeat` times
(medians). The clients are httpx async streams in a separate process (`_subscribe`) at the
lowest CPU priority (`nice -n 19`), so that on a small machine their CPU is not taken from
the server (in use they are on other machines); the server's CPU is read from /proc for its
process alone.
Every run's first model call waits until all clients are connected: the time is from
that release to the run's `finished_at`. Each client must receive every event, in order,
then `event: end`.

(b) `--runs` runs are written straight through the store API (a few at a time, in
concurrent tasks: group commit), then a `harness serve --no-execute` over that store
answers `GET /api/runs` `--queries` times per kind: the first page, each filter, and pages
deep into the listing (cursors from the store's own order). Latency is measured by the
client, per request, sequentially.

`--store postgres` uses a throwaway cluster (.ci/postgres.sh), or HARNESS_TEST_POSTGRES;
after the fill it runs `VACUUM ANALYZE` (what autovacuum would do soon after, and would
otherwise do while the queries are timed).
Prints markdown tables. Timing on a loaded machine is noisy: look at the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from harness.core.events import RunFinished, RunStarted, StepStarted
from harness.core.usage import Usage
from harness.server.auth import hash_token
from harness.server.views import encode_cursor
from harness.store import NewEvent, NewRun, open_store
from harness.testing import FakeOpenAIServer, FakeReply

ROOT = Path(__file__).resolve().parents[1]
HARNESS = str(Path(sys.executable).parent / "harness")
TOKEN = "bench-token-0001"
AGENTS = tuple(f"agent-{i}" for i in range(5))
TASK_TYPES = tuple(f"type-{i}" for i in range(10))
STEPS_PER_RUN = 8
"""`step_started` events of each stored run (the listing counts them)."""
STATES = (
    ("COMPLETED", 0.90),
    ("FAILED", 0.05),
    ("CANCELLED", 0.03),
    ("RUNNING", 0.01),
    ("PENDING", 0.005),
    ("PAUSED", 0.005),
)


# --- a harness serve process ---------------------------------------------------------


def write_home(home: Path, base_url: str) -> None:
    (home / "ws").mkdir(parents=True, exist_ok=True)
    (home / "harness.toml").write_text(
        f"""
[server]
max_streams_per_token = 10000   # every subscriber here holds the one bench token

[server.tokens.bench]
sha256 = "{hash_token(TOKEN)}"
role = "admin"

[models.fake]
provider = "openai"
model = "fake"
base_url = "{base_url}"

[agents.bench]
model = "fake"
tools = ["list_dir"]
workspace = "ws"
limits = {{ max_steps = 1000 }}
"""
    )


@contextmanager
def serving(home: Path, store: str, *args: str) -> Iterator[tuple[str, int]]:
    """A `harness serve` on a free port: its URL and pid."""
    env = {**os.environ, "HARNESS_HOME": str(home), "HARNESS_STORE": store, "NO_COLOR": "1"}
    for name in ("HARNESS_MODEL", "HARNESS_SERVER_TOKEN"):
        env.pop(name, None)
    proc = subprocess.Popen(
        [HARNESS, "serve", "--port", "0", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    if not first.startswith("harness serve "):
        proc.kill()
        raise SystemExit(f"harness serve did not start: {first!r}")
    try:
        yield first.split(": ", 1)[1].split(" ")[0], proc.pid
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


# --- (a) SSE subscribers on one run -------------------------------------------------------


class Model:
    """Answers `steps - 1` tool calls, then text; the first call of a run waits for `gate`."""

    def __init__(self, steps: int, latency_s: float) -> None:
        self.steps, self.latency_s = steps, latency_s
        self.gate, self.asked = threading.Event(), threading.Event()

    def __call__(self, body: Any) -> FakeReply:
        done = sum(1 for m in body.get("messages", ()) if m.get("role") == "tool")
        if done == 0:
            self.asked.set()
            self.gate.wait()
        if done + 1 < self.steps:
            reply = FakeReply.tool_call("list_dir", {})
        else:
            reply = FakeReply.text("done")
        return FakeReply(**{**_fields(reply), "delay_s": self.latency_s})


def _fields(reply: FakeReply) -> dict[str, Any]:
    return {name: getattr(reply, name) for name in reply.__dataclass_fields__}


def one_run(url: str, pid: int, model: Model, subscribers: int) -> dict[str, float]:
    """Wall and server CPU seconds of one run with `subscribers` clients on its events."""
    model.gate.clear()
    model.asked.clear()
    with httpx.Client(base_url=url, headers=headers(), timeout=60) as client:
        made = client.post("/api/runs", json={"task": "list", "agent": "bench"})
        made.raise_for_status()
        run_id = made.json()["run_id"]
        proc = None
        if subscribers:
            proc = subprocess.Popen(  # at the lowest priority: the clients are elsewhere
                [
                    "nice",
                    "-n",
                    "19",
                    sys.executable,
                    __file__,
                    "_subscribe",
                    url,
                    run_id,
                    str(subscribers),
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            assert proc.stdout is not None
            ready = proc.stdout.readline()
            if not ready.startswith("ready"):
                raise SystemExit(f"subscribers failed: {ready!r}")
        model.asked.wait(60)
        time.sleep(0.2)  # let the server settle after the connections
        cpu0, released = cpu_s(pid), time.time()
        model.gate.set()
        while (run := client.get(f"/api/runs/{run_id}").json())["finished_at"] is None:
            time.sleep(0.05)
        got: dict[str, Any] = {}
        if proc is not None:
            out, _ = proc.communicate(timeout=120)
            got = json.loads(out)
            if got["complete"] != subscribers:
                raise SystemExit(f"subscribers missed events: {got} (last_seq {run['last_seq']})")
            if got["last_seq"] != [run["last_seq"]]:
                raise SystemExit(f"subscribers saw other last seqs: {got}")
        return {
            "wall_s": run["finished_at"] - released,
            "cpu_s": cpu_s(pid) - cpu0,
            "events": run["last_seq"],
        }


async def subscribe(url: str, run_id: str, n: int) -> None:
    """`n` SSE clients on one run: print `ready` when all are connected, then a summary."""
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    connected = 0
    everyone = asyncio.Event()

    async def one(client: httpx.AsyncClient) -> tuple[bool, int]:
        nonlocal connected
        seqs: list[int] = []
        ended = False
        async with client.stream("GET", f"/api/runs/{run_id}/events") as stream:
            connected += 1
            if connected == n:
                everyone.set()
            async for line in stream.aiter_lines():
                if line.startswith("id: "):
                    seqs.append(int(line[4:]))
                elif line == "event: end":
                    ended = True
        in_order = seqs == list(range(1, len(seqs) + 1))
        return ended and in_order, seqs[-1] if seqs else 0

    async with httpx.AsyncClient(
        base_url=url, headers=headers(), timeout=120, limits=limits
    ) as client:
        tasks = [asyncio.create_task(one(client)) for _ in range(n)]
        await everyone.wait()
        print("ready", flush=True)
        results = await asyncio.gather(*tasks)
    print(
        json.dumps(
            {
                "complete": sum(ok for ok, _ in results),
                "last_seq": sorted({last for _, last in results}),
            }
        )
    )


def bench_sse(args: argparse.Namespace, store_of: Any) -> list[str]:
    model = Model(args.steps, args.latency)
    rows: dict[int, list[dict[str, float]]] = {0: [], args.subscribers: []}
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(model) as fake:
        home = Path(tmp)
        write_home(home, fake.base_url)
        with serving(home, store_of(home)) as (url, pid):
            one_run(url, pid, model, 0)  # warm-up: imports, the first connection
            for _ in range(args.repeat):
                for n in rows:
                    rows[n].append(one_run(url, pid, model, n))
    base = statistics.median(r["wall_s"] for r in rows[0])
    lines = [
        f"| SSE subscribers on one run ({args.steps} steps, {args.latency * 1e3:.0f} ms model "
        f"latency, {args.store}) | run wall s (median of {args.repeat}) | × none "
        "| server CPU s per run |",
        "|---|---|---|---|",
    ]
    for n, runs in rows.items():
        wall = statistics.median(r["wall_s"] for r in runs)
        cpu = statistics.median(r["cpu_s"] for r in runs)
        events = int(runs[0]["events"])
        lines.append(f"| {n} ({events} events each) | {wall:.3f} | {wall / base:.3f} | {cpu:.3f} |")
    return lines


# --- (b) listing 100,000 runs -------------------------------------------------------------


def pick_state(rng: random.Random) -> str:
    x = rng.random()
    for state, share in STATES:
        if x < share:
            return state
        x -= share
    return STATES[0][0]


async def fill(target: str, runs: int, seed: int = 7) -> None:
    """`runs` runs with `STEPS_PER_RUN + 2` events each, through the store API, 64 at once."""
    rng = random.Random(seed)
    store = await open_store(target)
    usage = Usage(input_tokens=100, output_tokens=20, requests=2)

    async def make(i: int) -> None:
        agent = AGENTS[i % len(AGENTS)]
        state = pick_state(rng)
        events = [
            NewEvent(payload=RunStarted(agent=agent, model="fake", tools=(), max_steps=20)),
            *(NewEvent(payload=StepStarted(step=n)) for n in range(1, STEPS_PER_RUN + 1)),
        ]
        if state == "COMPLETED":
            events.append(
                NewEvent(
                    payload=RunFinished(
                        output="ok", termination="answer", complete=True, usage=usage
                    )
                )
            )
        await store.create_run(
            NewRun(
                run_id=f"run_{uuid.uuid4().hex}",
                agent=agent,
                task="a task of the bench",
                state=state,
                model="fake",
                task_type=TASK_TYPES[i % len(TASK_TYPES)] if i % 3 else None,
            ),
            events=events,
        )

    try:
        for start in range(0, runs, 64):
            await asyncio.gather(*(make(i) for i in range(start, min(start + 64, runs))))
    finally:
        await store.close()


async def deep_cursors(target: str, depths: list[int]) -> dict[int, str]:
    store = await open_store(target)
    try:
        listed = await store.list_runs(limit=max(depths))
        return {d: encode_cursor(listed[d - 1]) for d in depths if d <= len(listed)}
    finally:
        await store.close()


def timed(client: httpx.Client, params: dict[str, Any], n: int) -> list[float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        answer = client.get("/api/runs", params=params)
        times.append(time.perf_counter() - started)
        answer.raise_for_status()
    return times


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def bench_list(args: argparse.Namespace, store_of: Any) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        write_home(home, "http://127.0.0.1:9/v1")
        target = store_of(home)
        started = time.perf_counter()
        asyncio.run(fill(target, args.runs))
        filled = time.perf_counter() - started
        if target.startswith("postgresql://"):
            psql(target, "VACUUM ANALYZE")  # as autovacuum would soon: the planner's statistics
        depths = [d for d in (1_000, args.runs // 2, args.runs - 100) if 0 < d <= args.runs]
        cursors = asyncio.run(deep_cursors(target, depths))
        kinds: list[tuple[str, dict[str, Any]]] = [
            ("first page, no filter", {}),
            ("state=COMPLETED", {"state": "COMPLETED"}),
            ("state=RUNNING", {"state": "RUNNING"}),
            ("state=FAILED,CANCELLED", {"state": "FAILED,CANCELLED"}),
            ("state=COMPLETED,FAILED", {"state": "COMPLETED,FAILED"}),
            ("agent=agent-3", {"agent": "agent-3"}),
            ("task_type=type-4", {"task_type": "type-4"}),
            *((f"cursor at run {d:,}", {"cursor": c}) for d, c in cursors.items()),
        ]
        lines = [
            f"| GET /api/runs, {args.runs:,} runs stored ({args.store}; filled in "
            f"{filled:.0f} s), limit 50 | p50 ms | p95 ms | p99 ms |",
            "|---|---|---|---|",
        ]
        with (
            serving(home, target, "--no-execute") as (url, _),
            httpx.Client(base_url=url, headers=headers(), timeout=60) as client,
        ):
            for name, params in kinds:
                timed(client, params, 3)  # warm-up
                times = timed(client, params, args.queries)
                p50, p95, p99 = (pct(times, p) * 1e3 for p in (50, 95, 99))
                lines.append(f"| {name} | {p50:.1f} | {p95:.1f} | {p99:.1f} |")
    return lines


# --- stores and main ------------------------------------------------------------------------


@contextmanager
def store_maker(kind: str) -> Iterator[Any]:
    """A function giving each bench's home its store target."""
    if kind == "sqlite":
        yield lambda home: str(home / "harness.db")
        return
    url = os.environ.get("HARNESS_TEST_POSTGRES")
    directory = None
    if not url:
        directory = tempfile.mkdtemp(prefix="bench-pg-")
        script = str(ROOT / ".ci" / "postgres.sh")
        url = subprocess.check_output(["bash", script, "start", directory], text=True).strip()
    try:
        yield lambda home: _fresh_database(url)
    finally:
        if directory is not None:
            subprocess.run(["bash", str(ROOT / ".ci" / "postgres.sh"), "stop", directory])


def _fresh_database(url: str) -> str:
    """A new empty database on the cluster of `url`."""
    name = f"bench_{uuid.uuid4().hex[:8]}"
    psql(url, f"CREATE DATABASE {name}")
    return url.rpartition("/")[0] + "/" + name


def psql(url: str, sql: str) -> None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/psql"))
    subprocess.check_call([str(found[-1]) if found else "psql", url, "-qc", sql])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_subscribe":
        url, run_id, n = sys.argv[2:5]
        asyncio.run(subscribe(url, run_id, int(n)))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subscribers", type=int, default=200)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--latency", type=float, default=0.1, help="model seconds per step")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--only", choices=("sse", "list"))
    args = parser.parse_args()
    with store_maker(args.store) as store_of:
        if args.only != "list":
            print("\n".join(bench_sse(args, store_of)), end="\n\n", flush=True)
        if args.only != "sse":
            print("\n".join(bench_list(args, store_of)), flush=True)


if __name__ == "__main__":
    main()
