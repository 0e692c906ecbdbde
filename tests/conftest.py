"""Fixtures shared by the whole suite: a working sandbox and workspaces it can use.

Sandbox tests fail, with the probe's reason, when no sandbox works here: a broken sandbox
must never turn into green skips. A developer on a machine without bubblewrap can opt out
explicitly with HARNESS_ALLOW_NO_SANDBOX=1; those tests then skip with the same reason.
Workspaces come from `make_workspace`: pytest's `tmp_path` sits under a 0700 directory the
sandbox uid cannot traverse.

PostgreSQL comes from HARNESS_TEST_POSTGRES (a URL) or from a throwaway cluster that
`.ci/postgres.sh` starts for the session (never installing anything). Each test gets its
own schema. When no server can be had the PostgreSQL tests skip with the reason, or fail
when HARNESS_REQUIRE_POSTGRES=1 (CI). `store_target` runs a test once per store kind.
"""

from __future__ import annotations

import compileall
import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import harness
from background_process import SHARED, shared_directory
from harness.tools.sandbox import Sandbox, SandboxStatus, make_workspace, probe_sandbox
from harness.tools.sandbox.workspace import sandbox_host_uid

SANDBOX_UID = sandbox_host_uid()
_OWN_SHARED = pytest.StashKey[Path]()
PG_SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "postgres.sh"


def pytest_configure(config: pytest.Config) -> None:
    """Compile harness's modules to bytecode once, before any test starts a process.

    Hundreds of tests start `harness`, or a Python script that imports it, in a subprocess.
    Under PYTHONDONTWRITEBYTECODE=1 (set on this project's machines) no process writes the
    bytecode it compiles, so each of them compiled every harness module it imported again:
    about half a second of CPU per process. Compiled here once, next to the sources (the
    `__pycache__` that Python itself would write), they read it instead. Up-to-date files
    are skipped, and Python still recompiles any module edited after this.
    """
    compileall.compile_dir(Path(harness.__file__).parent, quiet=1)
    # The directory the session's processes share (pytest-xdist's workers inherit the
    # variable): programs started once for the whole session keep their output there.
    if SHARED not in os.environ:
        config.stash[_OWN_SHARED] = shared_directory()
    # A suite started in the background by a shell without job control (`cmd &` in a
    # script, nohup) inherits SIGINT ignored, and so would every `harness worker` a test
    # starts and stops with SIGINT: it would never stop. Children inherit only "ignored".
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the session's shared directory, in the process that made it."""
    made = config.stash.get(_OWN_SHARED, None)
    if made is not None:
        shutil.rmtree(made, ignore_errors=True)
        os.environ.pop(SHARED, None)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Let test modules start slow, independent work once their tests are chosen.

    A module with a `start_in_background(test_name)` function has it called for each of its
    collected tests before any test runs: tests/test_static.py starts its static checks
    (pyright takes a minute) so that they run beside the suite instead of after it.
    """
    for item in session.items:
        module = getattr(item, "module", None)
        start = getattr(module, "start_in_background", None)
        if callable(start):
            start(item.name)


def sandbox_processes() -> list[str]:
    """Processes of the sandbox uid that this test process started and that are still alive.

    Only our own descendants count: other test runs on the same machine (or anything else
    running as nobody) are not ours to judge. The harness is a child subreaper, so a
    sandboxed process whose parent died is re-parented to us and still counts. As another
    user, only our processes inside a nested pid namespace count.
    """
    table = _process_table()
    found: list[str] = []
    for pid, (_, uid, nested, line) in table.items():
        if uid != SANDBOX_UID or not _descends_from(pid, os.getpid(), table):
            continue
        if os.geteuid() != 0 and not nested:
            continue
        found.append(f"{pid} {line}")
    return found


_Row = tuple[int, int, bool, str]


def _process_table() -> dict[int, _Row]:
    """pid -> (ppid, uid, in a nested pid namespace, 'Name State') for every process."""
    table: dict[int, _Row] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text(errors="replace")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        try:
            ppid = int(fields["PPid"])
            uid = int(fields["Uid"].split()[0])
        except (KeyError, ValueError, IndexError):
            continue
        nested = len(fields.get("NSpid", "").split()) >= 2
        line = f"{fields.get('Name', '?').strip()} {fields.get('State', '?').strip()}"
        table[int(entry.name)] = (ppid, uid, nested, line)
    return table


def _descends_from(pid: int, ancestor: int, table: dict[int, _Row]) -> bool:
    seen: set[int] = set()
    while pid in table and pid not in seen:
        if pid == ancestor:
            return True
        seen.add(pid)
        pid = table[pid][0]
    return pid == ancestor


@pytest.fixture
def leftovers() -> Callable[[], list[str]]:
    """Lists the processes that sandboxes left behind."""
    return sandbox_processes


@pytest.fixture(scope="session")
def sandbox_status() -> SandboxStatus:
    return probe_sandbox()


@pytest.fixture
def sandbox(sandbox_status: SandboxStatus) -> Iterator[Sandbox]:
    """A working Sandbox; after the test, no process of the sandbox uid may be left."""
    if not sandbox_status.available:
        reason = f"no sandbox: {sandbox_status.detail} (fix: {sandbox_status.fix})"
        if os.environ.get("HARNESS_ALLOW_NO_SANDBOX") == "1":
            pytest.skip(f"{reason}; skipped because HARNESS_ALLOW_NO_SANDBOX=1")
        pytest.fail(f"{reason}. Set HARNESS_ALLOW_NO_SANDBOX=1 to skip sandbox tests instead.")
    assert sandbox_processes() == [], "sandbox processes were running before the test"
    yield Sandbox()
    assert sandbox_processes() == [], "the sandbox left processes behind"


@pytest.fixture
def workspace() -> Iterator[Path]:
    path = make_workspace()
    yield path
    shutil.rmtree(path)


@dataclass(frozen=True)
class Postgres:
    url: str | None
    reason: str


def _start_cluster(directory: str) -> Postgres:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return Postgres(None, "psycopg is not installed: pip install -e '.[postgres]'")
    if shutil.which("bash") is None:
        return Postgres(None, "bash is needed to run .ci/postgres.sh")
    env = {**os.environ, "HARNESS_PG_NO_INSTALL": "1"}
    done = subprocess.run(
        ["bash", str(PG_SCRIPT), "start", directory],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return Postgres(None, f".ci/postgres.sh could not start PostgreSQL: {detail}")
    return Postgres(done.stdout.strip().splitlines()[-1], "")


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    url = os.environ.get("HARNESS_TEST_POSTGRES")
    if url:
        yield Postgres(url, "")
        return
    directory = tempfile.mkdtemp(prefix="harness-pg-")
    try:
        yield _start_cluster(directory)
    finally:
        stop = ["bash", str(PG_SCRIPT), "stop", directory]
        subprocess.run(stop, capture_output=True, check=False)


def require(postgres: Postgres) -> str:
    """The server's URL, or skip (fail in CI) with the reason there is none."""
    if postgres.url is None:
        if os.environ.get("HARNESS_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"HARNESS_REQUIRE_POSTGRES=1 but {postgres.reason}")
        pytest.skip(postgres.reason)
    return postgres.url


@pytest.fixture
def postgres_url(postgres: Postgres) -> Iterator[str]:
    """A URL whose connections use a fresh, empty schema of their own."""
    import psycopg

    base = require(postgres)
    schema = f"test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    try:
        yield f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]


@pytest.fixture(params=["sqlite", "postgres"])
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a fresh store lives, once per kind: a SQLite file, or a PostgreSQL schema."""
    if request.param == "sqlite":
        return str(tmp_path / "harness.db")
    return str(request.getfixturevalue("postgres_url"))
