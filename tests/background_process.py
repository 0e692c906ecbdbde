"""A program the tests start early and wait for later: its output in a file (never a pipe
it could block on), stopped at exit if a session ends before anyone waited for it."""

from __future__ import annotations

import atexit
import subprocess
import tempfile
from pathlib import Path
from typing import IO


class Background:
    """A started program (`argv` in `cwd`), its output kept in a temporary file."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self._output: IO[bytes] = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(argv, cwd=cwd, stdout=self._output, stderr=subprocess.STDOUT)
        atexit.register(self.stop)

    def wait(self, timeout: float = 600) -> tuple[int, str]:
        """Wait for the program (killed past `timeout`); its exit status and output."""
        try:
            returncode = self._proc.wait(timeout=timeout)
        finally:
            self.stop()
        self._output.seek(0)
        text = self._output.read().decode(errors="replace")
        self._output.close()
        return returncode, text

    def stop(self) -> None:
        """Kill the program if it still runs."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
