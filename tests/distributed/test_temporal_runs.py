"""Runs on Temporal end to end: the same events and result as embedded, controls from
another process, a mutating call whose worker died, bad addresses, and embedded processes
that leave Temporal runs alone. Real dev server, real SQLite, real processes; the only fakes
are the models.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from temporal_support import free_port
from temporalio.client import Client

from harness import Agent, Harness, Message, tool
from harness.agent.loop import UNKNOWN_OUTCOME
from harness.core.states import RunState
from harness.errors import ConfigError, RunError
from harness.gateway.profiles import ModelProfile
from harness.runtime import Settings
from harness.runtime.runtime_settings import RuntimeSettings
from harness.testing import FakeOpenAIServer, FakeReply, ScriptedModel, call, reply

PROCESSES = Path(__file__).parent / "core_processes"
sys.path.insert(0, str(PROCESSES))
from core_agents import deployer, stepper  # noqa: E402


def temporal(home: Path, address: str, queue: str) -> Settings:
    runtime = RuntimeSettings(backend="temporal", temporal_address=address, task_queue=queue)
    return Settings(home=home, runtime=runtime)


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def adder(strategy: str = "react") -> Agent:
    replies: list[Message | str] = [
        reply(None, call("add", {"a": 1, "b": 2}, id="c1")),
        reply("now the second", call("add", {"a": 3, "b": 4}, id="c2")),
        reply("3 and 7"),
    ]
    if strategy == "plan_execute":
        steps = {"steps": [{"description": "add 1 and 2"}, {"description": "add 3 and 4"}]}
        replies = [
            f"My plan:\n```json\n{json.dumps(steps)}\n```",
            reply(None, call("add", {"a": 1, "b": 2}, id="c1")),
            "the sum is 3",
            reply(None, call("add", {"a": 3, "b": 4}, id="c2")),
            "the sum is 7",
            "3 and 7",
        ]
    return Agent(
        name="adder",
        model=ScriptedModel(replies),
        tools=[add],
        instructions="Add.",
        strategy=strategy,
    )


async def state_of(h: Harness, run_id: str, *states: str, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while (await h.get(run_id)).state not in states:
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("strategy", ["react", "plan_execute"])
async def test_a_run_has_the_events_and_result_of_an_embedded_one(
    tmp_path: Path, temporal_address: str, task_queue: str, strategy: str
) -> None:
    async with Harness(Settings(home=tmp_path / "embedded")) as h:
        agent = adder(strategy)
        expected = await h.wait(await h.submit(agent, "add"), timeout=30)
        embedded_id = expected.run_id
        embedded_events = await h.store.events(embedded_id)
        embedded_messages = await h.store.messages(embedded_id)
    async with Harness(temporal(tmp_path / "temporal", temporal_address, task_queue)) as h:
        run_id = await h.submit(adder(strategy), "add")
        result = await h.wait(run_id, timeout=60)
        events = await h.store.events(run_id)
        messages = await h.store.messages(run_id)
        record = await h.get(run_id)
    assert [e.type for e in events] == [e.type for e in embedded_events]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [(m.role, m.content, m.tool_calls, m.tokens) for m in messages] == [
        (m.role, m.content, m.tool_calls, m.tokens) for m in embedded_messages
    ]
    assert (result.output, result.termination, result.usage) == (
        expected.output,
        expected.termination,
        expected.usage,
    )
    assert record.state == RunState.COMPLETED
    assert record.engine == "temporal"
    # The payloads say the same, but for times and ids.
    same = [
        (e.type, getattr(e.payload, "tool", None), getattr(e.payload, "step", None))
        for e in embedded_events
    ]
    assert [
        (e.type, getattr(e.payload, "tool", None), getattr(e.payload, "step", None)) for e in events
    ] == same


def control(home: Path, address: str, queue: str, *args: str) -> None:
    """One verb from another process, which must say `ok`."""
    script = str(PROCESSES / "core_control.py")
    done = subprocess.run(
        [sys.executable, script, str(home), address, queue, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == "ok", done.stderr


async def test_approve_pause_resume_and_cancel_from_another_process(
    tmp_path: Path, temporal_address: str, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEDGER", str(tmp_path / "ledger"))
    monkeypatch.setenv("HARNESS_TEMPORAL_HEARTBEAT_S", "1")
    home = tmp_path / "home"
    async with Harness(temporal(home, temporal_address, task_queue), agents=(stepper(),)) as h:
        run_id = await h.submit("stepper", "work")
        await state_of(h, run_id, RunState.WAITING_TOOL)
        (asked,) = await h.pending_approvals(run_id)
        await asyncio.to_thread(
            control, home, temporal_address, task_queue, "approve", run_id, asked["call_id"]
        )
        async with asyncio.timeout(30):  # the call runs once its decision is written
            while not (tmp_path / "ledger").exists():
                await asyncio.sleep(0.02)
        assert (tmp_path / "ledger").read_text() == "published news\n"
        await asyncio.to_thread(control, home, temporal_address, task_queue, "pause", run_id)
        await state_of(h, run_id, RunState.PAUSED)
        paused_at = (await h.get(run_id)).last_seq
        await asyncio.sleep(1.0)
        assert (await h.get(run_id)).last_seq == paused_at  # nothing happens while paused
        await asyncio.to_thread(control, home, temporal_address, task_queue, "resume", run_id)
        await state_of(h, run_id, RunState.RUNNING)
        await asyncio.to_thread(control, home, temporal_address, task_queue, "cancel", run_id)
        result = await h.wait(run_id, timeout=30)
        events = await h.store.events(run_id)
    assert result.termination == "cancelled"
    types = [e.type for e in events]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    for kind in ("approval_requested", "run_waiting", "approval_decided", "run_paused"):
        assert kind in types
    assert types.index("run_paused") < types.index("run_resumed") < types.index("run_cancelled")
    assert types[-1] == "run_cancelled"
    decided = next(e.payload for e in events if e.type == "approval_decided")
    assert decided.by == "user:other-process"  # type: ignore[attr-defined]
    cancelled = events[-1].payload
    assert cancelled.by == "user:other-process"  # type: ignore[attr-defined]
    assert cancelled.reason == "from another process"  # type: ignore[attr-defined]


class Worker:
    """A `core_worker.py` child process."""

    def __init__(self, home: Path, address: str, queue: str) -> None:
        script = str(PROCESSES / "core_worker.py")
        self.proc = subprocess.Popen(
            [sys.executable, script, str(home), address, queue],
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "ready"

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


async def test_a_mutating_call_whose_worker_died_reaches_the_model_as_unknown_and_never_reruns(
    tmp_path: Path, temporal_address: str, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = tmp_path / "ledger"
    monkeypatch.setenv("LEDGER", str(ledger))
    monkeypatch.setenv("DEPLOY_S", "30")
    monkeypatch.setenv("HARNESS_TEMPORAL_HEARTBEAT_S", "1")
    home = tmp_path / "home"
    first = Worker(home, temporal_address, task_queue)
    second: Worker | None = None
    try:
        settings = temporal(home, temporal_address, task_queue)
        async with Harness(settings, execute=False) as h:
            run_id = await h.submit(deployer(), "deploy")
            async with asyncio.timeout(30):
                while not ledger.exists():
                    await asyncio.sleep(0.02)
            first.kill()  # in the middle of the mutating call
            second = Worker(home, temporal_address, task_queue)
            result = await h.wait(run_id, timeout=60)
            events = await h.store.events(run_id)
            messages = await h.store.messages(run_id)
    finally:
        first.stop()
        if second is not None:
            second.stop()
    assert ledger.read_text() == "deploy 1 started\n"  # never ran again, never finished
    (answer,) = [m for m in messages if m.role == "tool"]
    assert answer.content == UNKNOWN_OUTCOME
    assert result.output == f"after deploy: {UNKNOWN_OUTCOME}"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [e.type for e in events].count("tool_started") == 1


async def test_an_unreachable_temporal_address_is_a_clear_error(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    settings = temporal(tmp_path, address, "nowhere")
    with pytest.raises(ConfigError, match=f"cannot reach Temporal at {address}"):
        async with Harness(settings):
            pass
    async with Harness(settings, execute=False) as h:  # reading the store needs no Temporal
        assert await h.list() == []
        with pytest.raises(ConfigError, match=f"cannot reach Temporal at {address}"):
            await h.submit(adder(), "add")
        assert await h.list() == []  # no run was created


async def test_an_embedded_worker_on_the_same_store_never_claims_a_temporal_run(
    tmp_path: Path, temporal_address: str, task_queue: str
) -> None:
    settings = temporal(tmp_path, temporal_address, task_queue)
    async with Harness(settings, execute=False) as h:
        run_id = await h.submit(adder(), "add")  # no worker polls the queue yet
    async with Harness(Settings(home=tmp_path), agents=(adder(),), lease_s=0.5) as embedded:
        await asyncio.sleep(1.5)  # several claims and lease looks
        record = await embedded.get(run_id)
        assert (record.state, record.engine, record.last_seq) == (RunState.PENDING, "temporal", 1)
        with pytest.raises(RunError, match="runs on Temporal"):
            await embedded.cancel(run_id)
        async with Harness(settings, agents=(adder(),)) as worker:
            result = await worker.wait(run_id, timeout=60)
    assert result.output == "3 and 7"


async def test_run_hands_on_event_every_event_once_in_order(
    tmp_path: Path, temporal_address: str, task_queue: str
) -> None:
    seen: list[int] = []
    async with Harness(temporal(tmp_path, temporal_address, task_queue)) as h:
        result = await h.run(adder(), "add", on_event=lambda event: seen.append(event.seq))
        stored = await h.store.events(result.run_id)
    assert result.output == "3 and 7"
    assert seen == [event.seq for event in stored]


async def test_a_run_cancelled_before_any_worker_took_it_ends_cancelled(
    tmp_path: Path, temporal_address: str, task_queue: str
) -> None:
    settings = temporal(tmp_path, temporal_address, task_queue)
    async with Harness(settings, execute=False) as h:
        run_id = await h.submit(adder(), "add")  # no worker polls the queue yet
        assert await h.send(run_id, "hello") > 0  # kept in its inbox; its workflow is told
        await h.cancel(run_id, reason="changed my mind", by="user:me")
        assert (await h.get(run_id)).state == RunState.PENDING  # its workflow says, later
    async with Harness(settings, agents=(adder(),)) as worker:
        result = await worker.wait(run_id, timeout=60)
        events = await worker.store.events(run_id)
    assert result.termination == "cancelled"
    assert [e.type for e in events] == ["run_submitted", "run_cancelled"]
    assert events[-1].payload.reason == "changed my mind"  # type: ignore[attr-defined]


async def test_a_pause_while_a_call_waits_for_approval_asks_again_on_resume(
    tmp_path: Path, temporal_address: str, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEDGER", str(tmp_path / "ledger"))
    settings = temporal(tmp_path, temporal_address, task_queue)
    async with Harness(settings, agents=(stepper(),)) as h:
        run_id = await h.submit("stepper", "work")
        await state_of(h, run_id, RunState.WAITING_TOOL)
        await h.pause(run_id)
        await state_of(h, run_id, RunState.PAUSED)
        await h.resume(run_id)
        await state_of(h, run_id, RunState.WAITING_TOOL)
        (asked,) = await h.pending_approvals(run_id)
        await h.deny(run_id, asked["call_id"], reason="not today")
        await state_of(h, run_id, RunState.RUNNING)
        await h.cancel(run_id)
        await h.wait(run_id, timeout=30)
        events = await h.store.events(run_id)
    types = [e.type for e in events]
    paused = next(e.payload for e in events if e.type == "run_paused")
    assert paused.at == "approval"  # type: ignore[attr-defined]
    assert types.count("approval_requested") == 2
    assert types.count("approval_decided") == 1
    assert not (tmp_path / "ledger").exists()  # denied: never published


async def test_model_calls_take_their_timeout_and_attempts_from_the_profile(
    tmp_path: Path, temporal_address: str, task_queue: str
) -> None:
    with FakeOpenAIServer(lambda body: FakeReply.text("done")) as server:
        profiles = {
            "main": ModelProfile(
                name="main",
                model="m",
                base_url=server.base_url,
                timeout_s=7.0,
                max_retries=1,
                fallbacks=("backup",),
            ),
            "backup": ModelProfile(
                name="backup", model="b", base_url=server.base_url, timeout_s=5.0, max_retries=0
            ),
        }
        settings = temporal(tmp_path, temporal_address, task_queue)
        settings = Settings(home=tmp_path, runtime=settings.runtime, profiles=profiles)
        async with Harness(settings) as h:
            run_id = await h.submit(Agent(name="asker", model="main"), "say done")
            result = await h.wait(run_id, timeout=60)
    client = await Client.connect(temporal_address)
    history = await client.get_workflow_handle(run_id).fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    calls = [a for a in scheduled if a.activity_type.name == "harness.model_call"]
    assert result.output == "done"
    assert len(calls) == 1
    # main: 7 s a try, 2 tries, one wait of up to 60 s; backup: 5 s once; 30 s to spare
    assert calls[0].start_to_close_timeout.ToTimedelta().total_seconds() == 7 * 2 + 60 + 5 + 30
    assert calls[0].retry_policy.maximum_attempts == 2


def _is_four(answer: str, ctx: object) -> bool | str:
    return True if answer.strip() == "4" else f"{answer!r} is not 4"


@pytest.mark.parametrize(
    "verifier", ['test "$HARNESS_ANSWER" = 4', _is_four], ids=["shell", "python"]
)
async def test_completion_checks_run_on_a_worker_as_embedded(
    tmp_path: Path, temporal_address: str, task_queue: str, verifier: object
) -> None:
    def checked() -> Agent:
        return Agent(
            name="checked",
            model=ScriptedModel(["5", "4"]),
            instructions="Answer with a number.",
            verifier=verifier,  # type: ignore[arg-type]
        )

    async with Harness(Settings(home=tmp_path / "embedded")) as h:
        expected = await h.wait(await h.submit(checked(), "2+2?"), timeout=60)
        embedded = await h.store.events(expected.run_id)
    async with Harness(temporal(tmp_path / "temporal", temporal_address, task_queue)) as h:
        run_id = await h.submit(checked(), "2+2?")
        result = await h.wait(run_id, timeout=60)
        events = await h.store.events(run_id)
    checks = [e.payload for e in events if e.type == "completion_checked"]
    assert [c.passed for c in checks] == [False, True]  # type: ignore[attr-defined]
    assert [e.type for e in events] == [e.type for e in embedded]
    assert (
        (result.output, result.termination)
        == (expected.output, expected.termination)
        == (
            "4",
            "final_answer",
        )
    )
