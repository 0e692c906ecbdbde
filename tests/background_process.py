"""A program the tests start early and wait for later, once per test session.

The suite runs in several processes (pytest-xdist's workers), and each of them collects
every test, so each would start the same program. `Background` starts it once for the
whole session: the first process to ask creates its marker in the session's shared
directory (`HARNESS_TEST_SHARED`, made by tests/conftest.py) and runs it; any process may
wait for it. Its output goes to a file (never a pipe it could block on), its exit status
to another once it ended. The process that started it kills it at exit if the session ends
before it finished.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHARED = "HARNESS_TEST_SHARED"
"""The variable naming the directory that the session's processes share."""

_RECORD = """
import os, subprocess, sys
status, output, *argv = sys.argv[1:]
with open(output, "wb") as out:
    code = subprocess.call(argv, stdout=out, stderr=subprocess.STDOUT)
with open(status + ".tmp", "w") as done:
    done.write(str(code))
os.replace(status + ".tmp", status)
"""
"""Runs a program, then writes its exit status (renamed into place: all or nothing)."""


def shared_directory() -> Path:
    """The session's shared directory (a fresh one when the suite did not make one)."""
    given = os.environ.get(SHARED)
    if given is None:
        given = os.environ[SHARED] = tempfile.mkdtemp(prefix="harness-tests-")
    return Path(given)


class Background:
    """The program run once per session under `name`; see the module.

    `Background.start` runs it (unless a process of the session did), `Background.started`
    finds it; either can `wait` for it.
    """

    def __init__(self, name: str) -> None:
        root = shared_directory()
        self.name = name
        self._marker = root / f"{name}.started"
        self._status = root / f"{name}.status"
        self._output = root / f"{name}.out"
        self._proc: subprocess.Popen[bytes] | None = None
        """The program's runner, when this process started it."""

    @classmethod
    def start(cls, name: str, argv: list[str], cwd: Path) -> Background:
        """Run `argv` in `cwd` as `name`, unless a process of the session already did."""
        found = cls(name)
        try:
            os.close(os.open(found._marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return found  # another process of the session started it
        command = [sys.executable, "-c", _RECORD, str(found._status), str(found._output), *argv]
        found._proc = subprocess.Popen(
            command, cwd=cwd, stdin=subprocess.DEVNULL, start_new_session=True
        )
        atexit.register(found.stop)
        return found

    @classmethod
    def started(cls, name: str) -> Background | None:
        """The program of `name`, when a process of the session started it."""
        found = cls(name)
        return found if found._marker.exists() else None

    def wait(self, timeout: float = 600) -> tuple[int, str]:
        """Wait for the program to end; its exit status and output.

        Raises:
            TimeoutError: It did not end within `timeout` seconds, or it was stopped.
        """
        deadline = time.monotonic() + timeout
        while not self._status.exists():
            ended = self._proc is not None and self._proc.poll() is not None
            if ended and not self._status.exists():
                raise TimeoutError(f"{self.name} was stopped before it ended")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"{self.name} did not end within {timeout:.0f} s")
            time.sleep(0.05)
        output = self._output.read_bytes().decode(errors="replace")
        return int(self._status.read_text()), output

    def stop(self) -> None:
        """Kill the program (its process group) if this process started it and it runs."""
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
