"""What observability costs a durable run: metrics, traces, both, against none.

    python bench/observability_overhead.py [--reps 5] [--burst 1000] [--seq 2000]
        [--latency 0.05] [--variants plain,metrics,traces,both] [--against SRC]
    python bench/observability_overhead.py --profile traces [--runs 1000]
    python bench/observability_overhead.py --subscribers
    valgrind --tool=cachegrind python bench/observability_overhead.py --replay both 1100

The runs are those of `bench/durable.py` (the peers' task through
`bench/peers_adapters/harness_durable.py`: model → tool → model, every event and message
committed to SQLite): `burst` starts 1,000 at once with 50 ms of model latency per call
(after 5 warm-up runs), `seq` runs 2,000 one after another with none (after 50). Each
measurement is a fresh process; the variants take turns (rotated each repetition) and the
table shows medians:

- `plain`: no metrics, no traces; `metrics`: `Harness(metrics=True)`; `traces`: every
  span exported over OTLP/HTTP (`OTEL_TRACES_EXPORTER=otlp`) to a receiver on 127.0.0.1
  that accepts every POST, through harness's child exporter process; `both`: the two.
- parent CPU: the harness process, all its threads, during the runs; child CPU: the
  exporter process, from the start of the runs until it has exported the last span and
  exited (on 2 cores it competes with the harness); wall: the runs, start to end.

A second table pairs each variant with plain in the same repetition: the median of those
ratios, and their quartiles (`--reps 15` or more makes them narrow enough to read).
`--against SRC` measures another source tree (`/work/main/src`) in the same turns, as
`@SRC` rows. `--profile VARIANT` profiles one burst in this process (cProfile): Python calls
per run and the functions that take the most time. `--subscribers` times the metrics
subscriber and the trace subscriber alone on the events of a real run.
`--replay VARIANT N` feeds a real run's publications N times to the subscribers of
`VARIANT` (`none` feeds nobody), one event-loop iteration per publication, spans through the
child exporter, untimed: run it under cachegrind with two values of N, and the difference
of instructions over the difference of N is what the subscribers cost the harness per run,
the same on a loaded machine as on a quiet one. Whole runs the same way: `valgrind
--tool=cachegrind --cache-sim=no python bench/observability_overhead.py --worker VARIANT
MODE N 0.05 PORT` (the export process is not counted; PORT takes the spans: any receiver
that answers a POST), for two values of N.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve()
VARIANTS = ("plain", "metrics", "traces", "both")
TASK = "What is 2 + 3?"
SLOW = [False]
"""Whether the model takes its latency: in a burst, not in its warm-up (as the peers')."""
_SINK = """
import sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
server.daemon_threads = True
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
sys.stdin.read()  # the sink ends with its parent's pipe
"""


# ----- one measurement, in a process of its own


def _agent(latency: float) -> Any:
    from harness import Agent, tool
    from harness.testing import FunctionModel, call, reply

    @tool(side_effects="none")
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def model(request):  # type: ignore[no-untyped-def]
        if SLOW[0] and latency:
            await asyncio.sleep(latency)
        last = request.messages[-1]
        if last.role == "tool":
            return reply(last.content)
        return reply(None, call("add", '{"a": 2, "b": 3}'))

    return Agent(name="bench", model=FunctionModel(model), tools=[add])


def _configure(variant: str, port: int) -> None:
    if variant in ("traces", "both"):
        os.environ["OTEL_TRACES_EXPORTER"] = "otlp"
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{port}"
    else:
        os.environ.pop("OTEL_TRACES_EXPORTER", None)


async def _open(variant: str, home: Path) -> Any:
    from harness import Harness
    from harness.runtime import Settings

    metrics = variant in ("metrics", "both")
    harness = Harness(Settings(home=home), max_concurrent=2000, adopt=False, metrics=metrics)
    await harness.open()
    return harness


def _cpu(who: int = resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _children() -> list[int]:
    """The pids of this process's children (the exporter, when traces are on)."""
    pids = []
    for task in Path("/proc/self/task").iterdir():
        pids += [int(p) for p in (task / "children").read_text().split()]
    return pids


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(variant: str, mode: str, runs: int, latency: float, port: int) -> dict[str, Any]:
    """One measurement: `runs` runs of `mode` under `variant`; times in seconds."""
    _configure(variant, port)
    with tempfile.TemporaryDirectory() as home:
        harness = await _open(variant, Path(home))
        agent = _agent(latency)
        for _ in range(5 if mode == "burst" else 50):
            assert (await harness.run(agent, TASK)).output == "5"
        await asyncio.sleep(0.2)  # the warm-up's spans leave before the clock starts
        child_before = sum(_cpu_of(pid) for pid in _children())
        gc_s = [0.0, 0.0]

        def collected(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                gc_s[1] = time.perf_counter()
            else:
                gc_s[0] += time.perf_counter() - gc_s[1]

        gc.callbacks.append(collected)
        cpu, wall = _cpu(), time.perf_counter()
        if mode == "burst":
            SLOW[0] = True
            done = await asyncio.gather(*(harness.run(agent, TASK) for _ in range(runs)))
            SLOW[0] = False
        else:
            done = [await harness.run(agent, TASK) for _ in range(runs)]
        wall, cpu = time.perf_counter() - wall, _cpu() - cpu
        gc.callbacks.remove(collected)
        assert all(result.output == "5" for result in done)
        await harness.aclose()  # the exporter exports what is left and exits: it is reaped
    child = _cpu(resource.RUSAGE_CHILDREN) - child_before if variant in ("traces", "both") else 0.0
    return {"wall": wall, "cpu": cpu, "child": child, "gc": gc_s[0], "runs": runs}


# ----- the turns and the table


def _sink() -> tuple[subprocess.Popen[str], int]:
    sink = subprocess.Popen(
        [sys.executable, "-c", _SINK], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert sink.stdout is not None
    return sink, int(sink.stdout.readline())


def _worker(src: str | None, variant: str, mode: str, args: argparse.Namespace, port: int) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    if src:
        env["PYTHONPATH"] = src
    runs = args.burst if mode == "burst" else args.seq
    command = [sys.executable, str(BENCH), "--worker", variant, mode, str(runs)]
    command += [str(args.latency), str(port)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{variant} {mode} failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def turns(args: argparse.Namespace) -> dict[tuple[str, str, str], list[dict]]:
    """Every (source, variant, mode) measured `reps` times, in rotating order."""
    sources = [None, *args.against]
    cells = [(s, v) for v in args.variants.split(",") for s in sources]
    results: dict[tuple[str, str, str], list[dict]] = {}
    sink, port = _sink()
    try:
        for rep in range(args.reps):
            for mode in args.modes.split(","):
                shift = rep % len(cells)
                for src, variant in cells[shift:] + cells[:shift]:
                    result = _worker(src, variant, mode, args, port)
                    results.setdefault((src or "", variant, mode), []).append(result)
                    print(f"rep {rep} {mode} {variant} {src or ''}: {result}", file=sys.stderr)
    finally:
        assert sink.stdin is not None
        sink.stdin.close()
        sink.wait()
    return results


def table(results: dict[tuple[str, str, str], list[dict]], args: argparse.Namespace) -> str:
    def med(src: str, variant: str, mode: str, key: str) -> float | None:
        rows = results.get((src, variant, mode))
        return statistics.median(r[key] for r in rows) if rows else None

    def cell(value: float | None, base: float | None, scale: float, digits: int = 0) -> str:
        if value is None:
            return "—"
        text = f"{value * scale:,.{digits}f}"
        if base and value != base:
            text += f" ({(value / base - 1) * 100:+.0f} %)"
        return text

    head = (
        f"| variant | seq µs/run | seq parent CPU µs/run | seq child CPU µs/run "
        f"| burst of {args.burst}: wall ms | parent CPU ms | child CPU ms | parent + child CPU ms |"
    )
    lines = [head, "|---|" + "---:|" * 7]
    for src in sorted({k[0] for k in results}):
        base = {m: {k: med(src, "plain", m, k) for k in ("wall", "cpu")} for m in ("seq", "burst")}
        for variant in args.variants.split(","):
            per = {m: 1e6 / args.seq if m == "seq" else 1e3 for m in ("seq", "burst")}
            s, b = "seq", "burst"
            cpu_b, child_b = med(src, variant, b, "cpu"), med(src, variant, b, "child")
            both_b = None if cpu_b is None or child_b is None else cpu_b + child_b
            name = variant + (f" @{src}" if src else "")
            lines.append(
                f"| {name} | {cell(med(src, variant, s, 'wall'), base[s]['wall'], per[s])} "
                f"| {cell(med(src, variant, s, 'cpu'), base[s]['cpu'], per[s])} "
                f"| {cell(med(src, variant, s, 'child'), None, per[s])} "
                f"| {cell(med(src, variant, b, 'wall'), base[b]['wall'], per[b])} "
                f"| {cell(cpu_b, base[b]['cpu'], per[b])} "
                f"| {cell(child_b, None, per[b])} "
                f"| {cell(both_b, base[b]['cpu'], per[b])} |"
            )
    return "\n".join(lines)


def paired(results: dict[tuple[str, str, str], list[dict]], args: argparse.Namespace) -> str:
    """Each variant's parent CPU over plain's in the same repetition (measured minutes
    apart at most): the median ratio and its quartiles, which say more than a ratio of
    medians when the machine's speed drifts between repetitions."""
    lines = [
        "| variant | mode | parent CPU vs plain, per repetition: median | quartiles | reps |",
        "|---|---|---:|---:|---:|",
    ]
    for src in sorted({k[0] for k in results}):
        for variant in args.variants.split(","):
            if variant == "plain":
                continue
            for mode in args.modes.split(","):
                plain, other = results.get((src, "plain", mode)), results.get((src, variant, mode))
                if not plain or not other:
                    continue
                ratios = sorted(o["cpu"] / p["cpu"] - 1 for p, o in zip(plain, other, strict=True))
                quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
                name = variant + (f" @{src}" if src else "")
                lines.append(
                    f"| {name} | {mode} | {statistics.median(ratios) * 100:+.1f} % "
                    f"| {quartiles[0] * 100:+.1f} … {quartiles[2] * 100:+.1f} % | {len(ratios)} |"
                )
    return "\n".join(lines)


# ----- a profile, and the subscribers alone


async def profile(variant: str, runs: int, latency: float, top: int) -> None:
    """Profile one burst of `variant` in this process; print calls per run and the top."""
    import cProfile
    import pstats

    sink, port = _sink()
    try:
        _configure(variant, port)
        with tempfile.TemporaryDirectory() as home:
            harness = await _open(variant, Path(home))
            agent = _agent(latency)
            for _ in range(5):
                await harness.run(agent, TASK)
            SLOW[0] = True
            prof = cProfile.Profile()
            prof.enable()
            await asyncio.gather(*(harness.run(agent, TASK) for _ in range(runs)))
            prof.disable()
            await harness.aclose()
    finally:
        assert sink.stdin is not None
        sink.stdin.close()
        sink.wait()
    stats = pstats.Stats(prof)
    print(f"{variant}: {stats.total_calls / runs:,.0f} Python calls per run")  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(top)
    ours = {k: v for k, v in stats.stats.items() if "observability" in k[0]}  # type: ignore[attr-defined]
    print("observability functions, calls per run, cumulative µs per run:")
    for (path, line, name), (_, calls, _, cum, _) in sorted(ours.items(), key=lambda kv: -kv[1][3])[
        :top
    ]:
        print(f"  {calls / runs:7.2f} {cum / runs * 1e6:8.1f}  {Path(path).name}:{line} {name}")


class Steps:
    """The run's events as the bus publishes them: one list per commit."""

    def __init__(self) -> None:
        self.steps: list[list[Any]] = []

    def __call__(self, event: Any) -> None:
        if event.seq:
            self.steps.append([event])

    def batch(self, events: Any) -> None:
        self.steps.append(list(events))


def _replay(subscriber: Any, steps: list[list[Any]]) -> None:
    """Hand `steps` over as the bus does: whole to a batch subscriber, else event by event."""
    take = getattr(subscriber, "batch", None)
    for step in steps:
        if take is not None:
            take(step)
        else:
            for event in step:
                subscriber(event)


async def subscribers(reps: int = 7, runs: int = 2000) -> None:
    """The metrics and trace subscribers alone, on a real run's events re-labelled.

    Each gets the events as the bus handed them out in the real run: a committed step in
    one call to a subscriber that takes batches (and one event at a time to one that
    does not, or from an older bus).

    The trace subscriber builds the spans here and drops them (`traces`, as `LiveTraces`
    does for an in-process export), or sends the events to a `ProcessExport` whose child
    builds the spans and prints them to nowhere (`traces + pipe`, as a Harness exporting
    over OTLP: the lines and their writes included, not the child). CPU time, the least of
    `reps` repetitions of `runs` runs.
    """
    from harness import Harness
    from harness.observability import LiveTraces, SpanExport
    from harness.observability.export_process import ProcessExport
    from harness.observability.forward import ForwardedTraces
    from harness.observability.metrics import MetricsSubscriber
    from harness.runtime import Settings

    class Drop(SpanExport):
        def export_records(self, context: Any, run_id: str, records: Any) -> None:
            pass

    seen = Steps()
    with tempfile.TemporaryDirectory() as scratch:
        async with Harness(Settings(home=Path(scratch))) as h:
            h.bus.subscribe(seen)
            await h.run(_agent(0.0), TASK)
    if not hasattr(h.bus, "publish_batch"):  # an older bus: every event alone
        seen.steps = [[e] for step in seen.steps for e in step]
    events = [e for step in seen.steps for e in step]

    async def nothing(run_id: str) -> None:
        return None

    for name in ("metrics", "traces", "traces + pipe"):
        best = float("inf")
        for rep in range(reps):
            ids = [f"run_{rep}_{i}" for i in range(runs)]
            batches = [[[_relabel(e, i) for e in step] for step in seen.steps] for i in ids]
            if name == "traces + pipe":
                traces: Any = ForwardedTraces(ProcessExport("console"), nothing)
            else:
                traces = LiveTraces(Drop(), nothing)
            subscriber = MetricsSubscriber() if name == "metrics" else traces
            started = time.process_time()
            for run_id, steps in zip(ids, batches, strict=True):
                if subscriber is traces:
                    traces.begin(run_id, traces.context_for_new_run())
                _replay(subscriber, steps)
            best = min(best, time.process_time() - started)
            await traces.aclose()
        print(
            f"{name}: {best / runs * 1e6:.1f} µs per run "
            f"({len(events)} events in {len(seen.steps)} publications)"
        )


def _relabel(event: Any, run_id: str) -> Any:
    """`event` as if of run `run_id`: its stored JSON too, as the store would have written it."""
    stored = event.stored and event.stored.replace(f'"{event.run_id}"', f'"{run_id}"', 1)
    return dataclasses.replace(event, run_id=run_id, stored=stored)


async def replay(variant: str, runs: int) -> None:
    """Feed a real run's publications `runs` times to `variant`'s subscribers (`--replay`)."""
    from harness import Harness
    from harness.observability.export_process import ProcessExport
    from harness.observability.forward import ForwardedTraces
    from harness.observability.metrics import MetricsSubscriber
    from harness.runtime import Settings

    seen = Steps()
    with tempfile.TemporaryDirectory() as scratch:
        async with Harness(Settings(home=Path(scratch))) as h:
            h.bus.subscribe(seen)
            await h.run(_agent(0.0), TASK)
    ids = [f"run_{i}" for i in range(runs)]
    batches = [[[_relabel(e, i) for e in s] for s in seen.steps] for i in ids]

    async def nothing(run_id: str) -> None:
        return None

    if variant not in ("none", *VARIANTS[1:]):
        raise SystemExit(f"--replay: none, metrics, traces or both, not {variant!r}")
    traced = variant in ("traces", "both")
    traces = ForwardedTraces(ProcessExport("console"), nothing) if traced else None
    subscribers: list[Any] = [traces] if traces is not None else []
    if variant in ("metrics", "both"):
        subscribers.append(MetricsSubscriber())
    for run_id, steps in zip(ids, batches, strict=True):
        if traces is not None:
            traces.begin(run_id, traces.context_for_new_run())
        for step in steps:
            for subscriber in subscribers:
                _replay(subscriber, [step])
            await asyncio.sleep(0)  # a publication per loop iteration, as in a run
    if traces is not None:
        await traces.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--burst", type=int, default=1000, help="runs started at once")
    parser.add_argument("--seq", type=int, default=2000, help="runs one after another")
    parser.add_argument("--latency", type=float, default=0.05, help="model latency in a burst")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--modes", default="burst,seq")
    parser.add_argument("--against", action="append", default=[], help="another src/ (repeat)")
    parser.add_argument("--profile", choices=VARIANTS, help="profile one burst of a variant")
    parser.add_argument("--runs", type=int, default=1000, help="runs in the --profile burst")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--subscribers", action="store_true", help="the subscribers alone")
    parser.add_argument("--replay", nargs=2, metavar=("VARIANT", "N"), help="for cachegrind")
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        variant, mode, runs, latency, port = args.worker
        result = asyncio.run(measure(variant, mode, int(runs), float(latency), int(port)))
        print(json.dumps(result))
    elif args.profile:
        asyncio.run(profile(args.profile, args.runs, args.latency, args.top))
    elif args.replay:
        asyncio.run(replay(args.replay[0], int(args.replay[1])))
    elif args.subscribers:
        asyncio.run(subscribers())
    else:
        results = turns(args)
        print(f"median of {args.reps}; (%) against plain of the same source")
        print(table(results, args))
        print()
        print(paired(results, args))


if __name__ == "__main__":
    main()
