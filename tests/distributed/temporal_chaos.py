"""What the Temporal chaos tests share: worker processes, holds, and the checks of a run.

A worker is a real process (tests/distributed/processes/worker.py) that the test kills by
its PID with SIGKILL; where the kill lands is chosen with hold files (see ledger_agent.py),
never with timing.
"""

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from harness import Harness, Message
from harness.core import RunEvent

PROCESSES = Path(__file__).parent / "processes"
sys.path.insert(0, str(PROCESSES))

from backends import settings  # noqa: E402 (from PROCESSES)
from ledger_agent import asking_agent, ledger_agent  # noqa: E402

__all__ = ["Chaos", "asking_agent", "ledger_agent", "settings"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Chaos:
    """The files of one chaos test, shared by the test and its workers."""

    home: Path
    """HARNESS_HOME of the test and its workers (their one SQLite store)."""
    backend: list[str]
    """The worker's arguments after HOME: `embedded`, or `temporal ADDRESS TASK_QUEUE`."""
    started: list[subprocess.Popen[str]] = field(default_factory=lambda: [])
    """Every worker started, for `reap`."""

    @property
    def ledger(self) -> Path:
        """One line per mutation that ran."""
        return self.home / "mutations.ledger"

    @property
    def model_ledger(self) -> Path:
        """One line `TASK TURN PID` per model turn that started."""
        return self.home / "model.ledger"

    @property
    def holds(self) -> Path:
        """Where hold files are created (see ledger_agent.py)."""
        return self.home / "holds"

    def hold(self, name: str) -> None:
        """Make the tool or model turn `name` wait (`hold-tool`, `hold-model-N`)."""
        self.holds.mkdir(exist_ok=True)
        (self.holds / name).touch()

    def release(self, name: str) -> None:
        """Let what `hold(name)` held go on."""
        (self.holds / name).unlink()

    def start_worker(self) -> subprocess.Popen[str]:
        """A worker process, once it is ready."""
        env = {
            **os.environ,
            "CHAOS_LEDGER": str(self.ledger),
            "CHAOS_MODEL_LEDGER": str(self.model_ledger),
            "CHAOS_HOLD": str(self.holds),
        }
        worker = subprocess.Popen(
            [sys.executable, str(PROCESSES / "worker.py"), str(self.home), *self.backend],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.started.append(worker)
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "ready"
        return worker

    def reap(self) -> None:
        """SIGKILL every worker still alive (a test that failed halfway leaves none)."""
        for worker in self.started:
            if worker.poll() is None:
                stop(worker, signal.SIGKILL)


def stop(worker: subprocess.Popen[str], how: signal.Signals) -> None:
    """Send `how` to the worker (by its PID) and reap it."""
    worker.send_signal(how)
    worker.wait()
    assert worker.stdout is not None
    worker.stdout.close()


def lines(path: Path) -> list[str]:
    """The lines of a ledger (none before it exists)."""
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


async def until_line(path: Path, start: str, timeout_s: float = 60.0) -> None:
    """Wait until the ledger `path` has a line that is `start`, or starts with it and a space."""
    async with asyncio.timeout(timeout_s):
        while not any(line == start or line.startswith(f"{start} ") for line in lines(path)):
            await asyncio.sleep(0.02)


def model_turns(chaos: Chaos) -> list[tuple[str, int, int]]:
    """The model turns that started: (task, turn, the PID of the process that made it)."""
    turns = [line.split(" ") for line in lines(chaos.model_ledger)]
    return [(task, int(turn), int(pid)) for task, turn, pid in turns]


def gap_free(events: list[RunEvent]) -> bool:
    """Whether the events' seqs are exactly 1..N."""
    return [e.seq for e in events] == list(range(1, len(events) + 1))


def each_once(path: Path) -> bool:
    """Whether no line of the ledger `path` is there twice."""
    return all(n == 1 for n in Counter(lines(path)).values())


Turn = tuple[str, str | None, tuple[str, ...], str | None]
"""A message in outline: role, content, the tools it calls, the call it answers."""


def outline(messages: list[Message]) -> list[Turn]:
    """What the model saw of a run, without ids or timestamps."""
    return [
        (m.role, m.content, tuple(c.name for c in m.tool_calls), m.tool_call_id) for m in messages
    ]


async def conversation(harness: Harness, run_id: str) -> list[Turn]:
    """The run's stored messages, in outline."""
    return outline(await harness.messages(run_id))
