"""`harness worker --metrics-port`: a real worker process serves the metrics of its runs."""

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness import Harness
from harness.runtime import Settings
from harness.testing import FakeOpenAIServer, FakeReply

from .scrape import get

HARNESS = str(Path(sys.executable).parent / "harness")


def env_for(home: Path) -> dict[str, str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("HARNESS_MODEL", None)
    env.pop("HARNESS_STORE", None)
    return env


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HARNESS, *args], env=env_for(home), capture_output=True, text=True, timeout=60
    )


@contextmanager
def worker(home: Path, *args: str) -> Iterator[str]:
    """A `harness worker` with `args`; yields the metrics URL it printed."""
    proc = subprocess.Popen(
        [HARNESS, "worker", *args],
        env=env_for(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline().startswith("worker "), proc.stderr and proc.stderr.read()
        line = proc.stdout.readline().strip()
        assert line.startswith("metrics: http://127.0.0.1:"), line
        yield line.removeprefix("metrics: ")
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert "worker stopped" in out


async def wait_ended(home: Path, count: int) -> list[str]:
    async with Harness(Settings(home=home), execute=False) as h:
        async with asyncio.timeout(60):
            while len(done := await h.list(state="COMPLETED")) < count:
                await asyncio.sleep(0.05)
        return [r.agent for r in done]


async def test_a_worker_serves_the_metrics_of_the_runs_it_executed(tmp_path: Path) -> None:
    replies = [FakeReply.text(f"answer {i}", input_tokens=11, output_tokens=3) for i in range(3)]
    with FakeOpenAIServer(replies) as server:
        for i in range(3):
            detached = cli(
                tmp_path, "run", "--detach", "--model", "openai:fake",
                "--base-url", server.base_url, "--tools", "none", f"task {i}",
            )  # fmt: skip
            assert detached.returncode == 0, detached.stderr
        with worker(tmp_path, "--metrics-port", "0", "--concurrency", "2") as url:
            (agent, *others) = await wait_ended(tmp_path, 3)
            page = await asyncio.to_thread(get, url)
    assert set(others) == {agent}
    labels = {"agent": agent, "task_type": "", "termination": "final_answer"}
    assert page.value("harness_runs_finished_total", **labels) == 3
    assert page.total("harness_model_tokens_total", kind="input") == 33
    assert page.total("harness_model_tokens_total", kind="output") == 9
    assert page.total("harness_model_call_duration_seconds_count") == 3
    assert page.value("harness_runs_pending") == 0
    assert page.value("harness_runs_in_flight") == 0


async def test_the_port_can_come_from_harness_toml(tmp_path: Path) -> None:
    (tmp_path / "harness.toml").write_text("[observability]\nmetrics_port = 0\n")
    with worker(tmp_path) as url:
        page = await asyncio.to_thread(get, url)
    assert page.value("harness_runs_pending") == 0
    assert "harness_model_tokens_total" not in page.names()  # nothing counted yet


def test_a_non_loopback_host_is_refused_unless_allowed(tmp_path: Path) -> None:
    done = cli(tmp_path, "worker", "--metrics-port", "0", "--metrics-host", "0.0.0.0")
    assert done.returncode != 0
    assert "not a loopback address" in done.stderr + done.stdout
    assert "--metrics-allow-remote" in done.stderr + done.stdout
    assert "Traceback" not in done.stderr


def test_observability_keys_are_read_and_checked(tmp_path: Path) -> None:
    from harness.errors import ConfigError
    from harness.runtime import load_settings

    toml = tmp_path / "harness.toml"
    toml.write_text(
        '[observability]\nmetrics_port = 9464\nmetrics_host = "::1"\nmetrics_allow_remote = true\n'
    )
    metrics = load_settings(tmp_path).metrics
    assert (metrics.port, metrics.host, metrics.allow_remote) == (9464, "::1", True)
    toml.write_text("[observability]\nmetrics_port = 70000\n")
    with pytest.raises(ConfigError, match=r"observability\.metrics_port"):
        load_settings(tmp_path)
