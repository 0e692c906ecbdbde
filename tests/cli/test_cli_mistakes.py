"""A careless user's mistakes: one clear line on stderr, exit 2, and no run left behind."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.store import open_store

HARNESS = str(Path(sys.executable).parent / "harness")


def stored_runs(home: Path) -> int:
    """How many runs the SQLite store under `home` holds (0 when it was never created)."""
    path = home / "harness.db"
    if not path.exists():
        return 0

    async def count() -> int:
        store = await open_store(path)
        try:
            return len(await store.list_runs(limit=1000))
        finally:
            await store.close()

    return asyncio.run(count())


def write_config(home: Path, content: bytes | None) -> None:
    home.mkdir()
    if content is None:
        (home / "harness.toml").mkdir()
    else:
        (home / "harness.toml").write_bytes(content)


RUN = ("run", "--model", "openai:fake", "--base-url", "http://127.0.0.1:9/v1")


@pytest.mark.parametrize(
    ("args", "config", "says"),
    [
        ((*RUN, "--tools", "rm_rf", "hi"), b"", "--tools: no tool is named 'rm_rf' (built-in: "),
        ((*RUN, "--tools", "bash,bash", "hi"), b"", "'bash' is named twice"),
        (("run", "--model", "foo:bar", "hi"), b"", "unknown model 'foo:bar'"),
        (("run", "--base-url", "ftp://127.0.0.1/v1", "hi"), b"", "is not an http(s) URL"),
        (("run", "--base-url", "not a url", "hi"), b"", "'not a url' is not an http(s) URL"),
        (("runs", "list", "--state", "BOGUS"), b"", "no run state 'BOGUS'"),
        (("runs", "events", "run_nope"), b"", "no run run_nope"),
        ((*RUN, "hi"), b"[defaults]\nmodel = '\xff'\n", "not UTF-8 text"),
        ((*RUN, "hi"), b"\x7fELF\x02\x01\x01\x00\x00", "not valid TOML"),
        ((*RUN, "hi"), None, "is a directory"),
        (("runs", "list"), None, "is a directory"),
    ],
    ids=[
        "unknown-tool",
        "tool-twice",
        "unknown-model",
        "ftp-base-url",
        "base-url-not-a-url",
        "bogus-state",
        "events-of-unknown-run",
        "config-not-utf8",
        "config-binary",
        "config-is-a-directory",
        "config-is-a-directory-runs-list",
    ],
)
def test_mistakes_are_one_line_exit_2_and_store_no_run(
    tmp_path: Path, args: tuple[str, ...], config: bytes | None, says: str
) -> None:
    home = tmp_path / "home"
    write_config(home, config)
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "80"}
    env.pop("HARNESS_MODEL", None)
    env.pop("HARNESS_STORE", None)
    done = subprocess.run(
        [HARNESS, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ")
    assert says in lines[0]
    assert stored_runs(home) == 0
