"""OTLP export from a child process: the harness writes its runs' events (or plain spans) to
a pipe, the child builds, encodes and sends the spans to a real OTLP/HTTP receiver on
127.0.0.1 — and still does when the harness is SIGKILLed; a child that dies or falls behind
never stalls or fails a run."""

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import Agent, Harness, tool
from harness.errors import ConfigError
from harness.observability import TraceContext, TraceSettings
from harness.observability.export_process import ProcessExport
from harness.observability.spans import SpanData
from harness.runtime import Settings, load_settings
from harness.testing import FunctionModel, call, reply

from .collectors import OTLPHTTPReceiver

TRACED_RUN = Path(__file__).parent / "processes" / "traced_run.py"


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _answer(request: object) -> object:
    if not any(m.role == "tool" for m in getattr(request, "messages", ())):
        return reply(None, call("add", {"a": 1, "b": 2}, id="c1"))
    return reply("3")


AGENT = Agent(name="adder", model=FunctionModel(_answer), tools=[add])
SPANS_PER_RUN = 6  # run, 2 steps, 2 chats, 1 tool


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    with OTLPHTTPReceiver() as receiver:
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "harness-tests")
        yield receiver


async def test_a_runs_spans_reach_the_receiver_through_the_child(
    tmp_path: Path, receiver: OTLPHTTPReceiver
) -> None:
    export = ProcessExport()
    assert export.child.pid != os.getpid()
    async with Harness(Settings(home=tmp_path), traces=export) as h:
        result = await h.run(AGENT, "add 1 and 2", timeout=30)
        stored = (await h.get(result.run_id)).trace_parent
    assert export.child.returncode == 0  # closing the Harness waited for the child
    assert stored is not None
    context = TraceContext.parse(stored)
    spans = receiver.spans.wait_for("invoke_agent adder")
    assert len(spans) == SPANS_PER_RUN
    assert {s.trace_id for s in spans} == {context.trace_id}
    (run,) = [s for s in spans if s.name == "invoke_agent adder"]
    assert run.span_id == context.span_id
    assert run.attributes["gen_ai.conversation.id"] == result.run_id
    (chat, _) = [s for s in spans if s.name == "chat function"]
    assert chat.kind == 3  # SPAN_KIND_CLIENT
    assert chat.start_ns < chat.end_ns
    assert {s.service for s in spans} == {"harness-tests"}
    assert export.dropped == 0


async def test_the_spans_of_many_runs_packed_together_keep_to_their_own_traces(
    tmp_path: Path, receiver: OTLPHTTPReceiver
) -> None:
    export = ProcessExport(flush_s=0.5)  # the runs' spans are queued, then packed as one frame
    async with Harness(Settings(home=tmp_path), traces=export) as h:
        results = await asyncio.gather(*(h.run(AGENT, f"add {i}", timeout=30) for i in range(5)))
        stored = {r.run_id: (await h.get(r.run_id)).trace_parent for r in results}
    assert export.child.returncode == 0  # the child exported everything and exited
    deadline = time.monotonic() + 20
    while len(receiver.spans.items) < 5 * SPANS_PER_RUN and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    spans = list(receiver.spans.items)
    assert len(spans) == 5 * SPANS_PER_RUN
    for run_id, trace_parent in stored.items():
        assert trace_parent is not None
        context = TraceContext.parse(trace_parent)
        mine = [s for s in spans if s.trace_id == context.trace_id]
        assert len(mine) == SPANS_PER_RUN
        (run,) = [s for s in mine if s.name == "invoke_agent adder"]
        assert run.span_id == context.span_id
        assert run.attributes["gen_ai.conversation.id"] == run_id
    assert export.dropped == 0


def test_spans_sent_before_a_sigkill_are_still_exported(
    tmp_path: Path, receiver: OTLPHTTPReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "600000")  # the child exports only when told
    harness = subprocess.Popen(
        [sys.executable, str(TRACED_RUN), str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert harness.stdout is not None
    done, run_id, child = harness.stdout.readline().split()
    assert done == "done"
    time.sleep(0.3)
    assert receiver.spans.items == []  # still batched in the child
    harness.send_signal(signal.SIGKILL)
    assert harness.wait() == -signal.SIGKILL
    harness.stdout.close()
    spans = receiver.spans.wait_for("invoke_agent adder")  # the child saw EOF and flushed
    assert len(spans) == SPANS_PER_RUN
    (run,) = [s for s in spans if s.name == "invoke_agent adder"]
    assert run.attributes["gen_ai.conversation.id"] == run_id
    _gone(int(child))


async def test_a_dead_child_is_logged_and_runs_go_on(
    tmp_path: Path, receiver: OTLPHTTPReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    export = ProcessExport()
    export.child.kill()
    export.child.wait()
    started = time.monotonic()
    with caplog.at_level(logging.ERROR, logger="harness.observability.export_process"):
        async with Harness(Settings(home=tmp_path), traces=export) as h:
            results = [await h.run(AGENT, "add 1 and 2", timeout=30) for _ in range(3)]
            events = [len(await h.store.events(r.run_id)) for r in results]
    assert [r.output for r in results] == ["3", "3", "3"]
    assert time.monotonic() - started < 10  # closing did not wait for the dead child
    gone = [r for r in caplog.records if "trace export process" in r.getMessage()]
    assert len(gone) == 1
    assert "is gone" in gone[0].getMessage()
    assert str(export.child.pid) in gone[0].getMessage()
    # every line the child did not get: its configuration, then each run's start and events
    assert export.dropped == 1 + sum(1 + n for n in events)
    assert receiver.spans.items == []


async def test_a_full_pipe_drops_and_counts_without_blocking(
    receiver: OTLPHTTPReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    export = ProcessExport(max_buffer=64 << 10)
    context = TraceContext.new()
    span = SpanData(
        span_id="run",
        parent_id=None,
        name="invoke_agent big",
        kind="internal",
        start=time.time(),
        end=time.time(),
        attributes={"harness.filler": "x" * 2000},
    )
    os.kill(export.child.pid, signal.SIGSTOP)  # stopped: it reads nothing more
    slowest, sent = 0.0, 400  # ~800 KB: more than the pipe and the buffer hold
    try:
        with caplog.at_level(logging.WARNING, logger="harness.observability.export_process"):
            for i in range(sent):
                started = time.perf_counter()
                export.export(context, f"run-{i}", [span])
                slowest = max(slowest, time.perf_counter() - started)
            await asyncio.sleep(0.05)
    finally:
        os.kill(export.child.pid, signal.SIGCONT)
    assert slowest < 0.05
    assert 0 < export.dropped < sent
    behind = [r for r in caplog.records if "is behind" in r.getMessage()]
    assert len(behind) == 1  # logged once, counted always
    await export.aclose()
    assert export.child.returncode == 0
    deadline = time.monotonic() + 20
    while len(receiver.spans.items) < sent - export.dropped and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert len(receiver.spans.items) == sent - export.dropped  # the rest all arrived


def _gone(pid: int) -> None:
    """Wait for `pid` to exit. Its parent was killed, so nobody may reap it: a zombie
    (state Z) has exited too."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return
        time.sleep(0.05)
    raise AssertionError(f"the export process {pid} did not exit")


def test_the_export_setting_is_read_and_checked(tmp_path: Path) -> None:
    (tmp_path / "harness.toml").write_text('[observability]\ntraces = "otlp"\nexport = "thread"\n')
    assert load_settings(tmp_path).observability.export == "thread"
    assert TraceSettings().export == "process"
    (tmp_path / "harness.toml").write_text('[observability]\nexport = "sideways"\n')
    with pytest.raises(ConfigError, match="export"):
        load_settings(tmp_path)
