"""The run lifecycle through the Harness API: real runs make every legal move, and every
illegal request raises `InvalidTransition` and changes nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness import Agent, Harness, Limits
from harness.core import CLAIMABLE_STATES, RUN_STATES, TERMINAL_STATES, RunState
from harness.errors import InvalidTransition
from harness.runtime import Settings
from harness.runtime.lifecycle import TRANSITIONS, check_transition
from harness.testing import FunctionModel, call, reply
from harness.tools import ApprovalPolicy, ApprovalRequest, tool
from harness.tools.approvals import ApprovalDecision

S = RunState

DESIGN = {
    (S.PENDING, S.RUNNING), (S.PENDING, S.CANCELLED),
    (S.RUNNING, S.WAITING_TOOL), (S.RUNNING, S.PAUSED), (S.RUNNING, S.COMPLETED),
    (S.RUNNING, S.FAILED), (S.RUNNING, S.CANCELLED),
    (S.WAITING_TOOL, S.RUNNING), (S.WAITING_TOOL, S.PAUSED), (S.WAITING_TOOL, S.FAILED),
    (S.WAITING_TOOL, S.CANCELLED),
    (S.PAUSED, S.PENDING), (S.PAUSED, S.CANCELLED),
}  # fmt: skip
"""DESIGN.md section 4; every move below is made by a real run."""


def test_the_table_is_exactly_the_design() -> None:
    table = {(a, b) for a, targets in TRANSITIONS.items() for b in targets}
    assert table == DESIGN
    assert set(TRANSITIONS) == set(RunState)
    assert frozenset({S.COMPLETED, S.FAILED, S.CANCELLED}) == TERMINAL_STATES
    assert {a for a, targets in TRANSITIONS.items() if not targets} == TERMINAL_STATES


def test_the_states_are_defined_once_and_the_store_and_runtime_share_them() -> None:
    from harness import store
    from harness.runtime import lifecycle

    assert lifecycle.RunState is RunState
    assert store.RUN_STATES is RUN_STATES == frozenset(RunState)
    assert store.TERMINAL_STATES is TERMINAL_STATES
    assert store.CLAIMABLE_STATES is CLAIMABLE_STATES == {S.PENDING, S.RUNNING, S.WAITING_TOOL}


def test_the_message_names_the_verb_the_run_and_its_state() -> None:
    with pytest.raises(InvalidTransition) as caught:
        check_transition("run_R", S.COMPLETED, S.PAUSED, verb="pause")
    assert str(caught.value) == "cannot pause run run_R: it is COMPLETED"


class Scene:
    """An agent whose model and tool wait until the test lets them go.

    The model's first answer calls `deploy` (which needs approval when `approval`), its
    second says it is done; `fail` makes the first answer an error instead; `endless` makes
    every answer call `deploy` again, so that the run takes steps until it is stopped.
    """

    def __init__(
        self, name: str, *, approval: bool = False, fail: bool = False, endless: bool = False
    ) -> None:
        self.model_called, self.model_go = asyncio.Event(), asyncio.Event()
        self.tool_running, self.tool_go = asyncio.Event(), asyncio.Event()

        async def answer(request: object) -> object:
            if request.messages[-1].role == "tool":  # type: ignore[attr-defined]
                return reply(None, call("deploy", {"target": "prod"})) if endless else "deployed"
            self.model_called.set()
            await self.model_go.wait()
            if fail:
                raise RuntimeError("the model broke")
            return reply(None, call("deploy", {"target": "prod"}))

        @tool(side_effects="mutating")
        async def deploy(target: str) -> str:
            """Deploy to a target."""
            self.tool_running.set()
            await self.tool_go.wait()
            return f"deployed to {target}"

        policy = ApprovalPolicy(tools={"deploy": "ask" if approval else "auto"})
        self.agent = Agent(
            name=name,
            model=FunctionModel(answer),  # type: ignore[arg-type]
            tools=[deploy],
            approvals=policy,
            limits=Limits(max_steps=1_000_000 if endless else 25),
        )

    def go(self) -> None:
        """Let the model and the tool finish."""
        self.model_go.set()
        self.tool_go.set()


async def state(harness: Harness, run_id: str) -> RunState:
    return RunState((await harness.get(run_id)).state)


async def until(harness: Harness, run_id: str, wanted: RunState) -> None:
    """Wait until the run is in `wanted` (polling the store; a guard against hanging)."""
    async with asyncio.timeout(30):
        while await state(harness, run_id) != wanted:
            await asyncio.sleep(0.01)


async def call_id(harness: Harness, run_id: str) -> str:
    (pending,) = await harness.pending_approvals(run_id)
    return str(pending["call_id"])


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path)


async def running(harness: Harness, scene: Scene) -> str:
    """Submit the scene's run and return it RUNNING (its model is answering)."""
    run_id = await harness.submit(scene.agent, "deploy")
    await scene.model_called.wait()
    assert await state(harness, run_id) == S.RUNNING
    return run_id


async def waiting(harness: Harness, scene: Scene) -> str:
    """Submit the scene's run and return it WAITING_TOOL (an approval is asked)."""
    run_id = await running(harness, scene)
    scene.model_go.set()
    await until(harness, run_id, S.WAITING_TOOL)
    return run_id


async def paused(harness: Harness, name: str) -> str:
    """Submit a run that takes steps until it is stopped, and return it PAUSED."""
    scene = Scene(name, endless=True)
    run_id = await running(harness, scene)
    scene.go()
    await harness.pause(run_id)  # it arrives at some step boundary
    await until(harness, run_id, S.PAUSED)
    return run_id


# PENDING


async def test_pending_to_running_and_pending_to_cancelled(settings: Settings) -> None:
    first, second = Scene("first"), Scene("second")
    async with Harness(settings, execute=False) as submitter:
        queued = [await submitter.submit(s.agent, "deploy") for s in (first, second)]
        assert [await state(submitter, r) for r in queued] == [S.PENDING, S.PENDING]
        await submitter.cancel(queued[1])
        assert await state(submitter, queued[1]) == S.CANCELLED
        # a run cancelled before it started says why it ended, like one cancelled mid-run
        assert (await submitter.get(queued[1])).termination == "cancelled"
    async with Harness(settings, agents=(first.agent, second.agent)) as worker:
        await first.model_called.wait()
        assert await state(worker, queued[0]) == S.RUNNING
        first.go()
        assert (await worker.wait(queued[0])).ok
        assert await state(worker, queued[1]) == S.CANCELLED  # never started


# RUNNING


async def test_running_to_completed(settings: Settings) -> None:
    scene = Scene("done")
    async with Harness(settings) as harness:
        run_id = await running(harness, scene)
        scene.go()
        await harness.wait(run_id)
        assert await state(harness, run_id) == S.COMPLETED


async def test_running_to_failed(settings: Settings) -> None:
    scene = Scene("broken", fail=True)
    async with Harness(settings) as harness:
        run_id = await running(harness, scene)
        scene.go()
        result = await harness.wait(run_id)
        assert result.termination == "error"
        assert await state(harness, run_id) == S.FAILED


async def test_running_to_cancelled(settings: Settings) -> None:
    scene = Scene("stopped")
    async with Harness(settings) as harness:
        run_id = await running(harness, scene)
        await harness.cancel(run_id)
        await until(harness, run_id, S.CANCELLED)


async def test_running_to_paused(settings: Settings) -> None:
    async with Harness(settings) as harness:
        await paused(harness, "paused")


async def test_running_to_waiting_tool(settings: Settings) -> None:
    async with Harness(settings) as harness:
        await waiting(harness, Scene("asks", approval=True))


# WAITING_TOOL


async def test_waiting_tool_to_running(settings: Settings) -> None:
    scene = Scene("approved", approval=True)
    async with Harness(settings) as harness:
        run_id = await waiting(harness, scene)
        await harness.approve(run_id, await call_id(harness, run_id))
        await scene.tool_running.wait()  # the decision commits before the call runs
        assert await state(harness, run_id) == S.RUNNING
        scene.go()
        assert (await harness.wait(run_id)).output == "deployed"


async def test_waiting_tool_to_paused_and_the_call_is_asked_again(settings: Settings) -> None:
    scene = Scene("held", approval=True)
    async with Harness(settings) as harness:
        run_id = await waiting(harness, scene)
        await harness.pause(run_id)
        await until(harness, run_id, S.PAUSED)
        assert not scene.tool_running.is_set()
        await harness.resume(run_id)
        await until(harness, run_id, S.WAITING_TOOL)
        await harness.approve(run_id, await call_id(harness, run_id))
        scene.go()
        result = await harness.wait(run_id)
        kinds = [e.type async for e in harness.events(run_id)]
    assert result.output == "deployed"
    assert kinds.count("approval_requested") == 2


async def test_waiting_tool_to_failed(settings: Settings) -> None:
    scene = Scene("unapproved", approval=True)
    asked, answer = asyncio.Event(), asyncio.Event()

    async def approval_service(request: ApprovalRequest) -> ApprovalDecision:
        asked.set()
        await answer.wait()
        raise RuntimeError("the approval service is down")

    async with Harness(settings, approver=approval_service) as harness:
        run_id = await running(harness, scene)
        scene.model_go.set()
        await asked.wait()
        assert await state(harness, run_id) == S.WAITING_TOOL
        answer.set()
        result = await harness.wait(run_id)
        assert result.termination == "error"
        assert await state(harness, run_id) == S.FAILED


async def test_waiting_tool_to_cancelled(settings: Settings) -> None:
    scene = Scene("refused", approval=True)
    async with Harness(settings) as harness:
        run_id = await waiting(harness, scene)
        await harness.cancel(run_id)
        await until(harness, run_id, S.CANCELLED)
        assert not scene.tool_running.is_set()


# PAUSED


async def test_paused_to_pending_and_paused_to_cancelled(settings: Settings) -> None:
    async with Harness(settings) as harness:
        ids = [await paused(harness, name) for name in ("resumed", "dropped")]
    async with Harness(settings, execute=False) as steering:
        assert await steering.resume(ids[0]) == ids[0]
        assert await state(steering, ids[0]) == S.PENDING
        await steering.cancel(ids[1])
        assert await state(steering, ids[1]) == S.CANCELLED
        assert (await steering.get(ids[1])).termination == "cancelled"


# Illegal requests


ILLEGAL = {
    S.PENDING: ("pause", "resume"),
    S.RUNNING: ("resume",),
    S.WAITING_TOOL: ("resume",),
    S.PAUSED: ("pause",),
    S.COMPLETED: ("pause", "cancel", "resume"),
    S.FAILED: ("pause", "cancel"),
    S.CANCELLED: ("pause", "cancel"),
}
"""What each state refuses. (resume of a FAILED or CANCELLED run starts a new run.)"""


async def runs_in_every_state(harness: Harness, settings: Settings) -> dict[RunState, str]:
    async with Harness(settings, execute=False) as submitter:  # nobody here runs it
        pending = await submitter.submit(Scene("never").agent, "deploy")
    done, broken = Scene("done"), Scene("broken", fail=True)
    done.go()
    broken.go()
    cancelled = await waiting(harness, Scene("cancelled", approval=True))
    await harness.cancel(cancelled)
    await until(harness, cancelled, S.CANCELLED)
    return {
        S.PENDING: pending,
        S.RUNNING: await running(harness, Scene("running")),
        S.WAITING_TOOL: await waiting(harness, Scene("waiting", approval=True)),
        S.PAUSED: await paused(harness, "paused"),
        S.COMPLETED: (await harness.run(done.agent, "deploy")).run_id,
        S.FAILED: (await harness.run(broken.agent, "deploy")).run_id,
        S.CANCELLED: cancelled,
    }


async def test_every_illegal_request_raises_and_changes_nothing(settings: Settings) -> None:
    async with Harness(settings) as harness:
        runs = await runs_in_every_state(harness, settings)
        for current, verbs in ILLEGAL.items():
            run_id = runs[current]
            assert await state(harness, run_id) == current
            for verb in verbs:
                with pytest.raises(InvalidTransition, match=f"it is {current.value}"):
                    await getattr(harness, verb)(run_id)
                assert await state(harness, run_id) == current, (current, verb)
