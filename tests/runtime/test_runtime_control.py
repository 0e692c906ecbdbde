"""Cancel in the middle of a tool, approvals across a SIGKILL, priorities and model limits.

The tests of a run outliving its process SIGKILL a real child process (processes/owner.py)
and run on SQLite and on PostgreSQL.
"""

import asyncio
import sys
from pathlib import Path

import pytest

from harness import Agent, Harness, Limits, Message, ModelRequest, tool
from harness.core.events import RunRecovered, payloads
from harness.runtime import Settings
from harness.testing import FunctionModel, ScriptedModel, call, reply
from harness.tools import bash_tool
from harness.tools.sandbox import Sandbox

sys.path.insert(0, str(Path(__file__).parent / "processes"))
from kill_agents import deployer, long_log, page_reader, sleeper
from owner_process import OwnerProcess


async def state_of(h: Harness, run_id: str, *states: str) -> None:
    async with asyncio.timeout(30):
        while (await h.get(run_id)).state not in states:
            await asyncio.sleep(0.02)


async def test_cancel_during_a_long_sandboxed_command_kills_it(
    tmp_path: Path, sandbox: Sandbox, workspace: Path, leftovers: object
) -> None:
    bash = bash_tool(cwd=workspace, sandbox=sandbox, timeout=60)
    command = {"command": "sleep 50 & sleep 51; echo never"}
    agent = Agent(
        name="sleeper", model=ScriptedModel([reply(None, call("bash", command))]), tools=[bash]
    )
    async with Harness(Settings(home=tmp_path)) as h:
        run_id = await h.submit(agent, "sleep")
        async with asyncio.timeout(30):
            await _started_sleeping(h, run_id)
        await h.cancel(run_id, reason="too slow")
        result = await h.wait(run_id, timeout=20)
        history = await h.messages(run_id)
    assert result.termination == "cancelled"
    assert history[-1].tool_calls[0].name == "bash"  # what was done is kept
    # SIGKILL was sent to the whole group before `wait` returned; a killed process may still
    # be in /proc for a moment while it exits (it would stay 50 s if it had not been killed).
    for _ in range(250):  # 5 s
        if not _sleeping():
            break
        await asyncio.sleep(0.02)
    left = [_described(proc) for proc in _sleeping()]
    assert not left, f"still running 5 s after the cancel: {left}"


async def _started_sleeping(h: Harness, run_id: str) -> None:
    while not _sleeping():
        await asyncio.sleep(0.05)


def _sleeping() -> list[Path]:
    return [p for p in Path("/proc").iterdir() if p.name.isdigit() and _is_sandboxed_sleep(p)]


def _described(proc: Path) -> str:
    """What a process is, for a failure message: its command, state, parent and pid namespaces."""
    try:
        status = (proc / "status").read_text().splitlines()
        command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return f"{proc.name}: gone"
    keep = ("State:", "PPid:", "NSpid:", "NSpgid:", "NSsid:", "Uid:")
    return f"{proc.name} {command!r} " + "; ".join(s for s in status if s.startswith(keep))


def _is_sandboxed_sleep(proc: Path) -> bool:
    try:
        # Exactly this test's commands: a `sleep 500` of someone else's shell is not ours.
        return (proc / "cmdline").read_bytes() in (b"sleep\x0050\x00", b"sleep\x0051\x00")
    except OSError:
        return False


async def test_an_approval_survives_a_sigkill_of_its_owner(
    tmp_path: Path, store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "deploys.log"
    monkeypatch.setenv("AGENTS_LOG", str(log))
    with OwnerProcess(tmp_path, store_target, "deployer", "deploy 1", log) as first:
        run_id = first.run_id
        assert run_id is not None
        async with Harness(Settings(home=tmp_path), store=store_target, execute=False) as h:
            await state_of(h, run_id, "WAITING_TOOL")
            assert [p["call_id"] for p in await h.pending_approvals(run_id)] == ["d0"]
        first.kill()  # the process dies while the call waits

    async with Harness(
        Settings(home=tmp_path), store=store_target, agents=(deployer(),), lease_s=1.0
    ) as second:
        await state_of(second, run_id, "WAITING_TOOL")
        await second.approve(run_id, "d0", by="user:ops")
        result = await second.wait(run_id, timeout=30)
        events = [e async for e in second.events(run_id)]
    assert result.output == "shipped 1"
    (recovered,) = payloads(events, RunRecovered)
    assert recovered.previous_owner == first.owner
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert tool_message.content == "deployed 0"
    assert log.read_text().splitlines() == ["deployed 0"]


async def test_a_run_taken_over_after_a_sigkill_names_the_dead_owner(
    tmp_path: Path, store_target: str
) -> None:
    with OwnerProcess(tmp_path, store_target, "sleeper", "answer slowly") as first:
        run_id = first.run_id
        assert run_id is not None
        async with Harness(Settings(home=tmp_path), store=store_target, execute=False) as h:
            assert (await h.get(run_id)).owner == first.owner  # it runs there, for an hour
        first.kill()

    async with Harness(
        Settings(home=tmp_path), store=store_target, agents=(sleeper(0.0),), lease_s=1.0
    ) as second:
        result = await second.wait(run_id, timeout=30)
        events = await second.store.events(run_id)
    assert result.output == "answered"
    (recovered,) = payloads(events, RunRecovered)
    assert recovered.previous_owner == first.owner
    assert recovered.owner == second.owner
    assert first.owner != second.owner


def _recorder(order: list[str]) -> FunctionModel:
    def answer(request: ModelRequest) -> Message:
        task = next(m.content for m in request.messages if m.role == "user")
        order.append(str(task))
        return reply(f"done {task}")

    return FunctionModel(answer, latency_s=0.05)


async def test_higher_priority_runs_start_first(tmp_path: Path) -> None:
    order: list[str] = []
    agent = Agent(name="prio", model=_recorder(order))
    async with Harness(Settings(home=tmp_path), execute=False) as queue:
        ids = [
            await queue.submit(agent, name, priority=p)
            for name, p in (("low", 0), ("high", 5), ("mid", 1))
        ]
    async with Harness(Settings(home=tmp_path), agents=(agent,), max_concurrent=1) as h:
        for run_id in ids:
            await h.wait(run_id, timeout=20)
    assert order == ["high", "mid", "low"]


async def test_a_model_limit_keeps_runs_of_that_model_apart(tmp_path: Path) -> None:
    active = 0
    peak = 0

    async def answer(request: ModelRequest) -> Message:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.05)
        active -= 1
        return reply("ok")

    agent = Agent(name="limited", model=FunctionModel(answer, name="m1"))
    async with Harness(Settings(home=tmp_path), max_concurrent=10, model_limits={"m1": 1}) as h:
        ids = [await h.submit(agent, f"t{i}") for i in range(4)]
        results = [await h.wait(run_id, timeout=20) for run_id in ids]
    assert all(r.output == "ok" for r in results)
    assert peak == 1


@pytest.mark.parametrize(
    ("max_concurrent", "model_limits", "allowed"), [(2, {}, 2), (10, {"m1": 1}, 1)]
)
async def test_a_burst_of_submits_stays_within_the_limits(
    tmp_path: Path, max_concurrent: int, model_limits: dict[str, int], allowed: int
) -> None:
    """Submits that all start before any of them is stored still take one slot each."""
    active = 0
    peak = 0

    async def answer(request: ModelRequest) -> Message:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.02)
        active -= 1
        return reply("ok")

    agent = Agent(name="burst", model=FunctionModel(answer, name="m1"))
    settings = Settings(home=tmp_path)
    async with Harness(settings, max_concurrent=max_concurrent, model_limits=model_limits) as h:
        ids = await asyncio.gather(*(h.submit(agent, f"t{i}") for i in range(8)))
        results = [await h.wait(run_id, timeout=20) for run_id in ids]
    assert [r.output for r in results] == ["ok"] * 8
    assert peak == allowed


async def test_a_pause_during_a_model_call_lets_the_step_finish_first(tmp_path: Path) -> None:
    ran: list[str] = []

    @tool(side_effects="mutating")
    def note(text: str) -> str:
        """Write a note (not safe to repeat)."""
        ran.append(text)
        return "noted"

    agent = Agent(
        name="noter",
        model=ScriptedModel(
            [reply(None, call("note", {"text": "a"})), reply("done")], latency_s=0.3
        ),
        tools=[note],
    )
    async with Harness(Settings(home=tmp_path), adopt=False) as h:
        run_id = await h.submit(agent, "note it")
        await state_of(h, run_id, "RUNNING")
        await h.pause(run_id)  # arrives while the first model call is in flight
        await state_of(h, run_id, "PAUSED")
        assert ran == ["a"]  # the step's tool call ran before the pause took effect
        await h.resume(run_id)  # and a non-adopting Harness picks its own run up again
        result = await h.wait(run_id, timeout=20)
    assert result.output == "done"
    assert ran == ["a"]
    assert [m.content for m in result.messages if m.role == "tool"] == ["noted"]


async def test_a_cut_result_stays_pageable_after_its_process_was_killed(
    tmp_path: Path, store_target: str
) -> None:
    """The full text of a cut result commits with its step; the next owner pages it."""
    with OwnerProcess(tmp_path, store_target, "reader", "read the log") as first:
        run_id = first.run_id
        assert first.line() == "stuck"  # in the model call after the log's step
        first.kill()

    async with Harness(
        Settings(home=tmp_path), store=store_target, agents=(page_reader(),), lease_s=1.0
    ) as second:
        assert run_id is not None
        result = await second.wait(run_id, timeout=30)
    full = long_log.function()
    assert result.output is not None
    assert result.output.endswith(full[11_000:14_000])
    assert "of 22,000" in result.output


@tool(side_effects="none")
def tick() -> str:
    """Do nothing, quickly."""
    return "tick"


def ticker() -> Agent:
    """Calls `tick` step after step, until it is stopped."""
    model = FunctionModel(lambda request: reply(None, call("tick", {})), latency_s=0.02)
    return Agent(name="ticker", model=model, tools=[tick], limits=Limits(max_steps=100_000))


async def test_on_postgres_a_pause_arrives_by_notify_not_by_polling(
    tmp_path: Path, postgres_url: str
) -> None:
    """The owner polls for controls once an hour: only LISTEN/NOTIFY can bring the pause."""
    settings = Settings(home=tmp_path)
    async with (
        Harness(settings, store=postgres_url, control_poll_s=3600) as owner,
        Harness(settings, store=postgres_url, execute=False) as other,
    ):
        run_id = await owner.submit(ticker(), "tick on")
        await state_of(other, run_id, "RUNNING")
        await other.pause(run_id)
        await state_of(other, run_id, "PAUSED")
        kinds = [e.type for e in await other.store.events(run_id)]
    assert kinds[-1] == "run_paused"
