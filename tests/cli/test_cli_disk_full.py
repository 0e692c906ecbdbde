"""The disk filling up during `harness run`: a clear end, only committed events, a run to recover.

Run as root only: HARNESS_HOME is a small tmpfs mounted for the test and filled up while the
model thinks.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.core.events import RunEvent
from harness.store import open_store
from harness.store.protocol import RunRecord
from harness.testing import FakeOpenAIServer, FakeReply

HARNESS = str(Path(sys.executable).parent / "harness")

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="mounting a small tmpfs to fill needs root"
)


@pytest.fixture
def small_home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    home.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(home)], check=True)
    try:
        yield home
    finally:
        subprocess.run(["umount", "-l", str(home)], check=True)


def env_for(home: Path) -> dict[str, str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
    for name in ("HARNESS_MODEL", "HARNESS_STORE"):
        env.pop(name, None)
    return env


def fill(path: Path) -> None:
    """Write `path` until the file system has no space left."""
    try:
        with path.open("wb") as out:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
    except OSError:
        pass


def stored(home: Path, run_id: str) -> tuple[RunRecord | None, list[RunEvent]]:
    async def read() -> tuple[RunRecord | None, list[RunEvent]]:
        store = await open_store(home / "harness.db")
        try:
            return await store.get_run(run_id), await store.events(run_id)
        finally:
            await store.close()

    return asyncio.run(read())


def lines_of(events: list[dict[str, Any]] | list[RunEvent]) -> list[tuple[int, str, float]]:
    return [
        (e["seq"], e["type"], e["ts"]) if isinstance(e, dict) else (e.seq, e.type, e.ts)
        for e in events
    ]


def test_a_full_disk_ends_the_run_clearly_and_leaves_it_to_recover(small_home: Path) -> None:
    env = env_for(small_home)
    subprocess.run([HARNESS, "runs", "list"], env=env, check=True, capture_output=True)
    filler = small_home / "filler"
    requests: list[int] = []

    def script(body: Any) -> FakeReply:
        requests.append(1)
        if len(requests) == 1:  # the disk fills up while the model thinks
            fill(filler)
            return FakeReply.tool_call("list_dir", {"path": "."})
        return FakeReply.text("listed it")

    with FakeOpenAIServer(script) as server:
        args = ["--model", "openai:fake", "--base-url", server.base_url, "list it"]
        done = subprocess.run(
            [HARNESS, "run", "--json", "--tools", "list_dir", *args],
            env=env,
            cwd=small_home.parent,  # the workspace: the home may not be the workspace itself
            capture_output=True,
            text=True,
            timeout=120,  # it used to hang here
        )
        assert done.returncode == 1, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        (line,) = done.stderr.splitlines()
        assert "database or disk is full" in line
        assert "harness worker" in line
        printed = [json.loads(text) for text in done.stdout.splitlines()]
        run_id = printed[0]["run_id"]
        filler.unlink()  # space is back
        record, events = stored(small_home, run_id)
        assert record is not None
        assert record.state == "RUNNING"
        assert lines_of(printed) == lines_of(events)

        worker = subprocess.Popen(
            [HARNESS, "worker"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            follow = subprocess.run(
                [HARNESS, "runs", "events", run_id, "--follow", "--json"],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
        finally:
            worker.send_signal(signal.SIGINT)
            worker.communicate(timeout=60)
    assert follow.returncode == 0, follow.stderr
    record, events = stored(small_home, run_id)
    assert record is not None
    assert (record.state, record.result) == ("COMPLETED", "listed it")
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert lines_of(events)[: len(printed)] == lines_of(printed)  # no number was reused
    assert "run_recovered" in [e.type for e in events[len(printed) :]]
