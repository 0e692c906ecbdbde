"""Issue 13's targets, each measured as its own bench measures it, in one table.

`bench/durable.py` runs this after the peers' table (`--targets-only` runs it alone). The
first three rows come from the peers' raw results of the same invocation (JSON lines of
`../shared/bench/peers/run.py --json`); the others run bench/overhead.py and
bench/runtime.py in fresh processes of this interpreter, and time the import.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

BENCH = Path(__file__).resolve().parent
IMPORT = "from harness import Agent, Harness, tool"


def peer_rows(results: Path) -> list[tuple[str, float | None, str, float]]:
    """Durable ratio, burst × floor and CPU per run in the burst, from the peers' results."""
    by: dict[tuple[str, str], dict[int, dict[str, float]]] = defaultdict(dict)
    for line in results.read_text().splitlines():
        row = json.loads(line)
        if "error" not in row:
            by[row["adapter"], row["mode"]][row["rep"]] = row

    def paired(key: str, mode: str, floor: str) -> float | None:
        mine, base = by["harness_durable", mode], by[floor, mode]
        ratios = [mine[rep][key] / base[rep][key] for rep in mine if rep in base]
        return statistics.median(ratios) if ratios else None

    bursts = by["harness_durable", "conc"].values()
    runs = max((int(r["runs"]) for r in bursts), default=1000)
    over_floor = [r["wall_ms"] / r["floor_ms"] for r in bursts]
    cpu = [r["cpu_ms"] / r["runs"] * 1e3 for r in bursts]
    return [
        ("durable run, × the raw durable loop", paired("us_per_run", "seq", "raw_durable"), "×", 5),
        (
            f"{runs:,} concurrent durable runs, 50 ms model latency, × the 100 ms floor",
            statistics.median(over_floor) if over_floor else None,
            "×",
            2,
        ),
        ("CPU per run in that burst, µs", statistics.median(cpu) if cpu else None, "µs", 150),
    ]


def _json_of(script: str, *args: str) -> dict[str, float]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [sys.executable, str(BENCH / script), *args, "--json", out.name]
        subprocess.check_call(command, stdout=subprocess.DEVNULL)
        return json.loads(Path(out.name).read_text())


def import_ms(times: int = 11) -> float:
    """Median wall time of a fresh interpreter importing the public names (bytecode cached)."""
    command = [sys.executable, "-c", IMPORT]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.check_call(command, env=env)  # writes the bytecode cache, if it can
    code = "import subprocess, sys, time; t = time.perf_counter(); "
    code += f"subprocess.check_call({command!r}); print(time.perf_counter() - t)"
    walls = [
        float(subprocess.check_output([sys.executable, "-c", code], env=env)) for _ in range(times)
    ]
    return statistics.median(walls) * 1e3


def own_rows(takeover: int, queued: int) -> list[tuple[str, float | None, str, float]]:
    """The rows bench/overhead.py and bench/runtime.py measure, and the import."""
    loop = _json_of("overhead.py", "--runs", "2000")
    run = _json_of(
        "runtime.py",
        *("--only", "concurrent,memory,queued,takeover"),
        *("--takeover", str(takeover), "--queued", str(queued)),
    )
    return [
        ("agent loop alone (no store), per 3-step run, µs", loop["loop_us"], "µs", 60),
        ("memory per in-flight run (Python heap), KiB", run["parked_heap_kib"], "KiB", 20),
        ("memory per in-flight run (RSS), KiB", run["parked_rss_kib"], "KiB", 20),
        (
            "longest single commit on the loop during the burst, ms (p50 "
            f"{run['commit_p50_ms']:.2f}, p99 {run['commit_p99_ms']:.2f}; its CPU "
            f"{run['commit_cpu_max_ms']:.2f})",
            run["commit_max_ms"],
            "ms",
            2,
        ),
        (
            f"takeover of {takeover:,} in-flight runs after their lease expired, s",
            run["takeover_after_lease_s"],
            "s",
            1,
        ),
        (f"{queued:,} queued runs, 100 at a time, s", run["queued_s"], "s", 2),
        (f"`python -c {IMPORT!r}`, bytecode cached, wall ms", import_ms(), "ms", 120),
    ]


def table(rows: Sequence[tuple[str, float | None, str, float]]) -> str:
    """Markdown: each measure, its value, its target and whether it is met."""
    lines = ["| measure | now | target | met |", "|---|---:|---:|:---:|"]
    for name, value, unit, target in rows:
        shown = "—" if value is None else _fmt(value, unit)
        met = "—" if value is None else ("yes" if value <= target else "no")
        lines.append(f"| {name} | {shown} | ≤ {_fmt(target, unit)} | {met} |")
    return "\n".join(lines)


def _fmt(value: float, unit: str) -> str:
    if value == int(value):
        return f"{value:,.0f}{'×' if unit == '×' else ''}"
    if unit == "×":
        return f"{value:.1f}×"
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}" if value < 10 else f"{value:.1f}"
