"""Start an owner process and SIGKILL it, for the tests that a run survives its process."""

import os
import signal
import subprocess
import sys
from pathlib import Path

OWNER = Path(__file__).parent / "owner.py"


class OwnerProcess:
    """An `owner.py` child: the run it submitted, its owner id, and its output lines.

    Args:
        home: HARNESS_HOME of the child.
        store: The store target it opens (a SQLite path or a PostgreSQL URL).
        agent: A name in `kill_agents.AGENTS`.
        task: Submit one run with this task; `None` only executes runs.
        log: Where the agents' tools write what they did.
    """

    def __init__(
        self, home: Path, store: str, agent: str, task: str | None, log: Path | None = None
    ) -> None:
        env = {**os.environ, "HARNESS_STORE": store, "AGENTS_LOG": str(log or "")}
        args = [sys.executable, str(OWNER), str(home), agent, *([task] if task else [])]
        self.proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True)
        first, self.owner = self.line().split()
        self.run_id = None if first == "ready" else first

    def line(self) -> str:
        """The next line the child printed."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the owner process ended (exit {self.proc.wait()})"
        return line.strip()

    def kill(self) -> None:
        """SIGKILL the child: no cleanup, its leases stay until they expire."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        assert self.proc.returncode == -signal.SIGKILL
        assert self.proc.stdout is not None
        self.proc.stdout.close()

    def __enter__(self) -> "OwnerProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.kill()
