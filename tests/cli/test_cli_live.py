"""What the command line shows while a run is still going: followed events, streamed text."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from harness.testing import FakeOpenAIServer, FakeReply

HARNESS = str(Path(sys.executable).parent / "harness")


class Output:
    """Everything a process has written to a pipe so far, read as it arrives."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self.text = ""
        self.closed = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe: IO[bytes]) -> None:
        while chunk := os.read(pipe.fileno(), 4096):
            with self._changed:
                self.text += chunk.decode(errors="replace")
                self._changed.notify_all()
        with self._changed:
            self.closed = True
            self._changed.notify_all()

    def wait_for(self, text: str) -> str:
        """Wait until `text` was written (a bound of 60 s only keeps a broken test from hanging)."""
        with self._changed:
            self._changed.wait_for(lambda: text in self.text or self.closed, timeout=60)
            assert text in self.text, f"{text!r} never came; got {self.text!r}"
            return self.text

    def wait_closed(self) -> str:
        with self._changed:
            self._changed.wait_for(lambda: self.closed, timeout=60)
            assert self.closed, f"still open after {self.text!r}"
            return self.text


def env_for(home: Path) -> dict[str, str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
    for name in ("HARNESS_MODEL", "HARNESS_STORE"):
        env.pop(name, None)
    return env


def start(home: Path, *args: str) -> tuple[subprocess.Popen[bytes], Output]:
    proc = subprocess.Popen(
        [HARNESS, *args], env=env_for(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    return proc, Output(proc.stdout)


@pytest.fixture
def stop_later() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)


def types(text: str) -> list[str]:
    return [json.loads(line)["type"] for line in text.splitlines()]


def test_follow_prints_events_live_and_ends_with_the_run(
    tmp_path: Path, stop_later: list[subprocess.Popen[bytes]]
) -> None:
    thinking = threading.Event()

    def script(body: Any) -> FakeReply:
        if len(body["messages"]) == 2:  # the first step: a call, committed before it runs
            return FakeReply.tool_call("list_dir", {"path": "."})
        thinking.wait(60)  # the second answer comes once the follower has shown the first step
        return FakeReply.text("followed to the end")

    with FakeOpenAIServer(script) as server:
        model = ["--model", "openai:fake", "--base-url", server.base_url, "--tools", "list_dir"]
        submitted = subprocess.run(
            [HARNESS, "run", "--detach", *model, "say something"],
            env=env_for(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
        run_id = submitted.stdout.strip()
        follower, followed = start(tmp_path, "runs", "events", run_id, "--follow", "--json")
        stop_later.append(follower)
        followed.wait_for('"run_submitted"')  # the follower was there before the run started
        worker, _ = start(tmp_path, "worker")
        stop_later.append(worker)
        followed.wait_for('"tool_started"')  # step 1, while the model thinks about step 2
        assert follower.poll() is None
        assert "run_finished" not in followed.text
        thinking.set()
        text = followed.wait_closed()
    assert follower.wait(timeout=60) == 0
    seen = types(text)
    assert seen[0] == "run_submitted"
    assert seen[-1] == "run_finished"
    assert json.loads(text.splitlines()[-1])["payload"]["output"] == "followed to the end"


def test_stream_prints_text_as_it_arrives(
    tmp_path: Path, stop_later: list[subprocess.Popen[bytes]]
) -> None:
    rest = threading.Event()
    first, second, third = "alpha-part", "bravo-part", "charl-part"  # streamed in thirds
    answer = first + second + third
    held = FakeReply(content=answer, hold=rest, hold_after=2)  # the role chunk, then a third
    with FakeOpenAIServer([held]) as server:
        model = ["--model", "openai:fake", "--base-url", server.base_url, "--tools", "none"]
        proc, out = start(tmp_path, "run", "--stream", *model, "say it slowly")
        stop_later.append(proc)
        shown = out.wait_for(first)
        assert second not in shown  # the rest of the answer is still held by the server
        assert proc.poll() is None
        rest.set()
        text = out.wait_closed()
    assert proc.wait(timeout=60) == 0
    assert answer in text.replace("\n", "")
    assert "final answer" in text
