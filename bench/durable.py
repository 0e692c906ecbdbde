"""Durable harness runs next to the raw durable loop and the peers' durable variants.

Runs ../shared/bench/peers (its methodology, its floors, its peer adapters) with one more
adapter, bench/peers_adapters/harness_durable.py, in a scratch copy, in a venv of its own
that has the peers' frameworks and this project installed:

    python bench/durable.py [--quick] [--reps N] [--traced] [--observed] [--modes seq,conc]

`--traced` adds bench/peers_adapters/harness_traced.py: the same runs with every span
exported over OTLP/HTTP (needs `harness[otel]` in that venv) — the cost of tracing.
`--observed` adds bench/peers_adapters/harness_observed.py: traced, and metrics kept too.

Prints the peers' markdown table. First use creates bench/.venv-peers (a few minutes).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

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
    args = parser.parse_args()
    exe = python()
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "peers"
        shutil.copytree(PEERS, copy)
        for adapter in ("harness_durable.py", "harness_traced.py", "harness_observed.py"):
            shutil.copy(ROOT / "bench" / "peers_adapters" / adapter, copy / "adapters")
        extra = [("harness_traced", args.traced), ("harness_observed", args.observed)]
        only = ",".join([args.only, *(name for name, on in extra if on)])
        command = [exe, "run.py", "--only", only, "--reps", str(args.reps), "--modes", args.modes]
        subprocess.check_call([*command, *(["--quick"] if args.quick else [])], cwd=copy)


if __name__ == "__main__":
    main()
