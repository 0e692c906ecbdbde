"""`harness run` where people run agents: in their own project, as root, with one workspace rule.

Each test runs the real `harness` command against a real OpenAI-compatible server on
127.0.0.1 (harness.testing's FakeOpenAIServer).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.testing import FakeOpenAIServer, FakeReply
from harness.tools.sandbox import Sandbox

HARNESS = str(Path(sys.executable).parent / "harness")


def harness(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1"}
    env.pop("HARNESS_MODEL", None)
    return subprocess.run(
        [HARNESS, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def stored_runs(home: Path) -> int:
    database = home / "harness.db"
    if not database.exists():
        return 0
    with sqlite3.connect(database) as db:
        return int(db.execute("SELECT count(*) FROM runs").fetchone()[0])


@pytest.fixture
def project() -> Iterator[Path]:
    """A fresh directory owned by whoever runs the tests (root in CI), under a 0700 parent."""
    private = Path(tempfile.mkdtemp(prefix="home-"))
    root = private / "myproject"
    root.mkdir()
    (root / "app.py").write_text("print('hello')\n")
    (root / "old.txt").write_text("obsolete\n")
    yield root
    shutil.rmtree(private)


@pytest.mark.skipif(os.geteuid() != 0, reason="the root user's case; a user owns their project")
def test_root_runs_an_agent_in_its_own_project_whose_bash_calls_change_files(
    sandbox: Sandbox, project: Path, tmp_path: Path
) -> None:
    replies = [
        FakeReply.tool_call("bash", {"command": "ls *.py | wc -l"}),
        FakeReply.tool_call(
            "bash",
            {
                "command": "mkdir -p out && echo 'v1' > out/report.txt && "
                "sed -i 's/hello/hello, world/' app.py && rm old.txt && echo done"
            },
        ),
        FakeReply.text("There is 1 Python file; I wrote out/report.txt and removed old.txt."),
    ]
    with FakeOpenAIServer(replies) as server:
        done = harness(
            "run", "--model", "openai:fake", "--base-url", server.base_url,
            "how many Python files are here? then tidy up",
            cwd=project, home=tmp_path / "home",
        )  # fmt: skip
        results = [request.body["messages"][-1]["content"] for request in server.requests[1:]]
    assert done.returncode == 0, done.stdout + done.stderr
    assert results[0].startswith("1\n")
    assert results[1].startswith("done\n")
    assert (project / "out" / "report.txt").read_text() == "v1\n"
    assert (project / "app.py").read_text() == "print('hello, world')\n"
    assert not (project / "old.txt").exists()
    for path in [project, *project.rglob("*")]:
        info = path.lstat()
        assert (info.st_uid, info.st_gid) == (0, 0), path
        assert not info.st_mode & (stat.S_ISUID | stat.S_ISGID)


@pytest.mark.parametrize(
    ("where", "workspace"),
    [("/", None), ("/etc", None), (None, "/etc"), (None, "/"), (None, "/usr/lib"),
     ("~", None), (None, "~/.ssh-harness-test")],
)  # fmt: skip
def test_refused_workspaces_stop_the_run_before_it_exists_with_one_message(
    tmp_path: Path, where: str | None, workspace: str | None
) -> None:
    home = tmp_path / "home"
    credentials = Path.home() / ".ssh-harness-test"
    credentials.mkdir(exist_ok=True)
    try:
        cwd = Path(os.path.expanduser(where)) if where else tmp_path
        args = ["--workspace", os.path.expanduser(workspace)] if workspace else []
        for tools in ("bash", "read_file,write_file", "list_dir,search,edit_file"):
            done = harness(
                "run", *args, "--tools", tools, "--model", "openai:fake",
                "--base-url", "http://127.0.0.1:9/v1", "read etc/shadow",
                cwd=cwd, home=home,
            )  # fmt: skip
            message = " ".join(done.stderr.split())  # the terminal may wrap it
            assert done.returncode == 2, done.stdout + done.stderr
            assert message.startswith("error: refusing ")
            assert "as a workspace" in message
            assert "harness workspace new" in message
            assert "Traceback" not in done.stderr
            assert stored_runs(home) == 0
    finally:
        credentials.rmdir()


def test_workspace_new_prints_a_fresh_workspace_the_tools_accept(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    done = harness("workspace", "new", cwd=tmp_path, home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    made = Path(done.stdout.strip())
    try:
        assert made.is_dir()
        assert list(made.iterdir()) == []
        replies = [FakeReply.tool_call("bash", {"command": "echo ok > f"}), FakeReply.text("ok")]
        with FakeOpenAIServer(replies) as server:
            run = harness(
                "run", "--workspace", str(made), "--model", "openai:fake",
                "--base-url", server.base_url, "write f", cwd=tmp_path, home=tmp_path / "home",
            )  # fmt: skip
        assert run.returncode == 0, run.stdout + run.stderr
        assert (made / "f").read_text() == "ok\n"
    finally:
        shutil.rmtree(made)


def test_two_terminals_run_agents_in_one_project_at_once(
    sandbox: Sandbox, project: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "HARNESS_HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1"}

    def replies(name: str) -> list[FakeReply]:
        script = f"for i in $(seq 1 200); do echo {name}$i >> {name}.log; done; mkdir -p {name}"
        return [FakeReply.tool_call("bash", {"command": script}), FakeReply.text(f"{name} done")]

    with FakeOpenAIServer(replies("a")) as first, FakeOpenAIServer(replies("b")) as second:
        runs = [
            subprocess.Popen(
                [
                    HARNESS,
                    "run",
                    "--model",
                    "openai:fake",
                    "--base-url",
                    server.base_url,
                    "--json",
                    "write your log",
                ],
                cwd=project,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for server in (first, second)
        ]
        outputs = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    for name in ("a", "b"):
        assert (project / f"{name}.log").read_text().split() == [
            f"{name}{i}" for i in range(1, 201)
        ]
        assert (project / name).is_dir()
    assert stored_runs(home) == 2
    owner = (project.stat().st_uid, project.stat().st_gid)
    assert {(p.lstat().st_uid, p.lstat().st_gid) for p in project.rglob("*")} == {owner}
