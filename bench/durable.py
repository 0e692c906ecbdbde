"""Durable harness runs next to the raw durable loop and the peers' durable variants.

Runs ../shared/bench/peers (its methodology, its floors, its peer adapters) with one more
adapter, bench/peers_adapters/harness_durable.py, in a scratch copy, in a venv of its own
that has the peers' frameworks and this project installed:

    python bench/durable.py [--quick] [--reps N] [--traced] [--observed] [--modes seq,conc]
    python bench/durable.py --targets-only     # issue 13's table alone (no peers)

`--traced` adds bench/peers_adapters/harness_traced.py: the same runs with every span
exported over OTLP/HTTP (needs `harness[otel]` in that venv) — the cost of tracing.
`--observed` adds bench/peers_adapters/harness_observed.py: traced, and metrics kept too.
What their CPU columns count: the peers' worker reads `getrusage(RUSAGE_SELF)` around the
timed runs, so the harness process (all its threads) only. The export child that encodes and
sends the spans is another process and is not in them (nor is what it does after the timed
runs end); `bench/observability_overhead.py` measures both, the child from the first timed
run until it has exported the last span and exited.

Prints the peers' markdown table, then issue 13's targets beside what this invocation
measured (bench/_targets.py: the peers' seq and conc results of the harness adapter, and
bench/overhead.py, bench/runtime.py and an import timing in fresh processes; `--no-targets`
leaves them out). First use creates bench/.venv-peers (a few minutes).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _targets  # next to this file

ROOT = Path(__file__).resolve().parents[1]
PEERS = next(  # next to the repository, or next to the folder of its worktrees
    (p / "shared" / "bench" / "peers" for p in ROOT.parents if (p / "shared").is_dir()),
    ROOT.parent / "shared" / "bench" / "peers",
)
VENV = ROOT / "bench" / ".venv-peers"
ONLY = "harness_durable,pydanticai_sqlite,oai_agents_sqlite_normal,lgraph_sqlite_normal"


def python() -> str:
    exe = VENV / "bin" / "python"
    if not exe.exists():
        subprocess.check_call([sys.executable, "-m", "venv", str(VENV)])
        pip = [str(exe), "-m", "pip", "install", "-q"]
        subprocess.check_call([*pip, "-r", str(PEERS / "requirements.txt")])
        subprocess.check_call([*pip, "-e", f"{ROOT}[otel]"])
    return str(exe)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 repetition, 100 runs")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--only", default=ONLY)
    parser.add_argument("--traced", action="store_true", help="add harness_traced")
    parser.add_argument("--observed", action="store_true", help="add harness_observed")
    parser.add_argument("--modes", default="seq,conc,import,calls")
    parser.add_argument("--no-targets", action="store_true", help="the peers' table only")
    parser.add_argument("--targets-only", action="store_true", help="issue 13's rows only")
    parser.add_argument("--takeover", type=int, default=1000, help="runs taken over")
    parser.add_argument("--queued", type=int, default=10_000, help="runs queued")
    args = parser.parse_args()
    rows: list[tuple[str, float | None, str, float]] = []
    if not args.targets_only:
        rows += peers(args)
    if not args.no_targets:
        rows += _targets.own_rows(args.takeover, args.queued)
        print("\n**Issue 13's targets**\n")
        print(_targets.table(rows))


def peers(args: argparse.Namespace) -> list[tuple[str, float | None, str, float]]:
    """Run the peers' benchmark (prints its table); the rows of issue 13 it measured."""
    exe = python()
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "peers"
        shutil.copytree(PEERS, copy)
        for adapter in ("harness_durable.py", "harness_traced.py", "harness_observed.py"):
            shutil.copy(ROOT / "bench" / "peers_adapters" / adapter, copy / "adapters")
        extra = [("harness_traced", args.traced), ("harness_observed", args.observed)]
        only = ",".join([args.only, *(name for name, on in extra if on)])
        results = Path(scratch) / "results.jsonl"
        command = [exe, "run.py", "--only", only, "--reps", str(args.reps), "--modes", args.modes]
        command += ["--json", str(results), *(["--quick"] if args.quick else [])]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.check_call(command, cwd=copy, env=env)
        return _targets.peer_rows(results) if results.exists() else []


if __name__ == "__main__":
    main()
