"""Pages a durable run writes to SQLite's WAL, by B-tree (table or index).

    python bench/wal_pages.py [--runs 200] [--concurrent 1]

Runs bench/runtime.py's agent (model → tool → model, no latency) under a scratch
HARNESS_HOME, `--concurrent` runs at a time, with the store's own checkpoints held off, then
reads the WAL frames those runs wrote: each frame is one page, whole, and each commit writes
every page it changed, so the pages per run are what its commits cost in bytes. Each page is
named by the B-tree it belongs to now (SQLite's `dbstat`); `sqlite_schema` is page 1, whose
header changes whenever the file grows. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3  # noqa: TID251  (reads the file's pages through dbstat)
import struct
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import runtime  # next to this file
from harness import Harness
from harness.runtime import Settings
from harness.store import sqlite as sqlite_store

_FRAME_HEADER = 24
_WAL_HEADER = 32


async def wal_bytes(home: Path, runs: int, concurrent: int) -> bytes:
    """What the WAL gained while `runs` runs ran, after a few to warm up."""
    async with Harness(Settings(home=home), max_concurrent=concurrent + 1, adopt=False) as h:
        bench = runtime.agent(0)
        for _ in range(10):
            await h.run(bench, "What is 2 + 3?")
        wal = home / "harness.db-wal"
        start = wal.stat().st_size
        for _ in range(runs // concurrent):
            await asyncio.gather(*(h.run(bench, "What is 2 + 3?") for _ in range(concurrent)))
        return wal.read_bytes()[start:]


def pages_by_tree(db: Path, data: bytes) -> tuple[int, Counter[str]]:
    """Commits and the pages of each B-tree in WAL frames `data` (which start at a frame)."""
    conn = sqlite3.connect(db)
    try:
        size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        names = {
            int(page): str(name) for name, page in conn.execute("SELECT name, pageno FROM dbstat")
        }
    finally:
        conn.close()
    commits, pages = 0, Counter[str]()
    for offset in range(0, len(data) - _FRAME_HEADER, _FRAME_HEADER + size):
        page, after_commit = struct.unpack(">II", data[offset : offset + 8])
        pages[names.get(page, "(freed)")] += 1
        commits += after_commit != 0
    return commits, pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--concurrent", type=int, default=1)
    args = parser.parse_args()
    sqlite_store._CHECKPOINT_BYTES = 1 << 40  # pyright: ignore[reportPrivateUsage]
    sqlite_store._IDLE_S = float("inf")  # pyright: ignore[reportPrivateUsage]
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        data = asyncio.run(wal_bytes(home, args.runs, args.concurrent))
        if len(data) < _WAL_HEADER:
            sys.exit("the WAL did not grow: was it checkpointed?")
        commits, pages = pages_by_tree(home / "harness.db", data)
    runs = args.runs // args.concurrent * args.concurrent
    print(
        f"{runs} runs, {commits / runs:.2f} commits and {pages.total() / runs:.1f} pages per run\n"
    )
    print("| B-tree | pages per run |\n|---|---:|")
    for name, count in pages.most_common():
        print(f"| {name} | {count / runs:.2f} |")


if __name__ == "__main__":
    main()
