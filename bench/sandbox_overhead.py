"""Per-call overhead of the bwrap sandbox: `echo hi` through `Sandbox.run` vs plain bash.

    python bench/sandbox_overhead.py [--runs 50]

The two variants are interleaved so that machine load hits both alike. Prints a markdown
table of the median and p90 per call. Nothing here is a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from harness.tools.sandbox import Sandbox


async def _sandboxed(sandbox: Sandbox, workspace: Path) -> float:
    started = time.perf_counter()
    result = await sandbox.run("echo hi", workspace=workspace)
    elapsed = time.perf_counter() - started
    assert result.output == "hi\n", result
    return elapsed


def _plain() -> float:
    started = time.perf_counter()
    subprocess.run(["bash", "-c", "echo hi"], check=True, capture_output=True)
    return time.perf_counter() - started


def _row(name: str, samples: list[float]) -> str:
    median = statistics.median(samples) * 1000
    p90 = statistics.quantiles(samples, n=10)[-1] * 1000
    return f"| {name} | {median:.1f} ms | {p90:.1f} ms |"


async def _main(runs: int) -> None:
    sandbox = Sandbox()
    status = sandbox.probe()
    if not status.available:
        raise SystemExit(f"no sandbox: {status.detail}\nfix: {status.fix}")
    workspace = sandbox.make_workspace()
    # As root, a directory of root's own goes through an idmapped mount (a user's project).
    project = Path(tempfile.mkdtemp(prefix="bench-project-")) if os.geteuid() == 0 else None
    try:
        await _sandboxed(sandbox, workspace)  # warm up: the probe and imports
        if project is not None:
            await _sandboxed(sandbox, project)
        full: list[float] = []
        mapped: list[float] = []
        plain: list[float] = []
        for _ in range(runs):
            full.append(await _sandboxed(sandbox, workspace))
            if project is not None:
                mapped.append(await _sandboxed(sandbox, project))
            plain.append(_plain())
    finally:
        shutil.rmtree(workspace)
        if project is not None:
            shutil.rmtree(project)
    load = os.getloadavg()[0]
    print(f"`echo hi`, {runs} interleaved runs each, {status.detail}, load {load:.2f}\n")
    print("| Variant | Median | p90 |\n|---|---|---|")
    print(_row("`Sandbox.run`, workspace of the sandbox uid (prlimit + uid drop + bwrap)", full))
    if mapped:
        print(_row("`Sandbox.run`, root's own directory (idmapped mount)", mapped))
    print(_row("`subprocess.run(['bash', '-c', 'echo hi'])`", plain))


def main() -> None:
    parser = argparse.ArgumentParser(description="Per-call overhead of the bwrap sandbox.")
    parser.add_argument("--runs", type=int, default=50)
    asyncio.run(_main(parser.parse_args().runs))


if __name__ == "__main__":
    main()
