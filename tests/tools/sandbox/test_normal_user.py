"""The sandbox as a normal user runs it: bwrap as that user, in a directory of their own.

The suite runs as root in CI, so this test starts a second Python as an unprivileged uid,
with a copy of harness it can read (the checkout may sit under root's 0700 home), and runs
real sandboxed commands there: the non-root path works as before, and the setuid filter
binds there too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import orjson
import pyseccomp
import pytest

import harness
from harness.tools.sandbox import Sandbox

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="already a normal user: other tests")

USER = 4242
"""An unprivileged uid with no other use on the machine."""

CHILD = """
import asyncio, json, sys
from pathlib import Path
from harness.errors import ConfigError
from harness.tools.sandbox import Sandbox
from harness.tools.sandbox.workspace import check_workspace

async def main(own, foreign):
    sandbox = Sandbox()
    done = {}
    result = await sandbox.run(
        "id -u; echo hi > made.txt; cp /bin/true s; chmod 4755 s; echo chmod=$?; "
        "mkdir -m 2775 g; echo mkdir=$?", workspace=Path(own))
    done["output"] = result.output
    try:
        check_workspace(Path(foreign))
    except ConfigError as exc:
        done["foreign"] = str(exc)
    print(json.dumps(done))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


@pytest.fixture
def readable_harness() -> Iterator[Path]:
    """harness and its two compiled/third-party imports, where any uid can read them."""
    lib = Path(tempfile.mkdtemp(prefix="harness-lib-"))
    os.chmod(lib, 0o755)
    shutil.copytree(Path(harness.__file__).parent, lib / "harness")
    shutil.copytree(Path(orjson.__file__).parent, lib / "orjson")
    shutil.copy(pyseccomp.__file__, lib / "pyseccomp.py")
    for path in [lib, *lib.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    yield lib
    shutil.rmtree(lib)


@pytest.fixture
def own_and_foreign() -> Iterator[tuple[Path, Path]]:
    base = Path(tempfile.mkdtemp(prefix="user-", dir="/tmp/harness-workspaces"))
    os.chmod(base, 0o755)
    own, foreign = base / "project", base / "roots"
    own.mkdir()
    foreign.mkdir(mode=0o755)
    os.chown(own, USER, USER)
    yield own, foreign
    shutil.rmtree(base)


def test_a_normal_user_runs_sandboxed_commands_in_their_own_directory(
    sandbox: Sandbox, readable_harness: Path, own_and_foreign: tuple[Path, Path]
) -> None:
    own, foreign = own_and_foreign
    python = f"/usr/bin/python3.{sys.version_info.minor}"
    assert Path(python).exists(), f"{python} is needed to run harness as a normal user"
    done = subprocess.run(
        ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--clear-groups", "--",
         python, "-c", CHILD, str(own), str(foreign)],
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONPATH": str(readable_harness)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    lines = report["output"].splitlines()
    assert lines[0] == "1000"  # the user's commands see the sandbox user, as before
    assert "chmod=1" in lines  # the setuid filter binds here too
    assert "mkdir=1" in lines
    assert (own / "made.txt").read_text() == "hi\n"
    assert {(path.stat().st_uid, path.stat().st_mode & 0o6000) for path in own.iterdir()} == {
        (USER, 0)
    }
    assert "belongs to uid 0, not to you" in report["foreign"]
