"""Approve and deny of one call at the same moment: exactly one wins, the loser is told.

A decision is a compare-and-set in the store. The race runs between two real `harness`
processes, many times, on SQLite and on PostgreSQL, while a third process owns the run;
the tool ran exactly for the calls whose approval won. Which command wins is up to the
machine: on a loaded one `deny` may win every round, so the run must go on asking after
any number of denials in a row.
"""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import Harness
from harness.core.states import TERMINAL_STATES
from harness.errors import AlreadyDecided
from harness.runtime import Settings

sys.path.insert(0, str(Path(__file__).parent / "processes"))
from kill_agents import deployer
from owner_process import OwnerProcess

HARNESS = str(Path(sys.executable).parent / "harness")
ROUNDS = 8


def decide(home: Path, store: str, verb: str, run_id: str, call_id: str) -> subprocess.Popen[str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "HARNESS_STORE": store}
    env.update(NO_COLOR="1", COLUMNS="300")
    return subprocess.Popen(
        [HARNESS, verb, run_id, call_id],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def until_waiting(h: Harness, run_id: str, call_id: str) -> None:
    """Wait until the run asks about `call_id`; fail at once, saying why, if it ended."""
    async with asyncio.timeout(60):
        while call_id not in [p["call_id"] for p in await h.pending_approvals(run_id)]:
            record = await h.store.get_run(run_id)
            assert record is not None
            assert record.state not in TERMINAL_STATES, (
                f"run {run_id} ended ({record.state}, {record.termination}) before it asked "
                f"about {call_id}: {record.error or record.result}"
            )
            await asyncio.sleep(0.02)


def race(home: Path, store: str, run_id: str, call_id: str, verbs: tuple[str, str]) -> str:
    """Start both commands at once; returns the verb that won, after checking the loser."""
    procs = [decide(home, store, verb, run_id, call_id) for verb in verbs]
    outcomes = [(p.communicate(timeout=60), p.returncode) for p in procs]
    codes = [code for _, code in outcomes]
    assert sorted(codes) == [0, 2], outcomes
    winner = verbs[codes.index(0)]
    (_, loser_err), _ = outcomes[codes.index(2)]
    past = "approved" if winner == "approve" else "denied"
    assert f"call {call_id} of run {run_id} is already decided: {past} by user:" in loser_err
    assert "Traceback" not in loser_err
    return winner


async def test_racing_approve_and_deny_processes_one_wins_and_the_run_obeys_it(
    tmp_path: Path, store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "deploys.log"
    monkeypatch.setenv("AGENTS_LOG", str(log))
    with OwnerProcess(tmp_path, store_target, "deployer", f"deploy {ROUNDS}", log) as owner:
        run_id = owner.run_id
        assert run_id is not None
        winners: dict[str, str] = {}
        async with Harness(Settings(home=tmp_path), store=store_target, execute=False) as h:
            for n in range(ROUNDS):
                await until_waiting(h, run_id, f"d{n}")
                verbs = ("approve", "deny") if n % 2 == 0 else ("deny", "approve")
                winners[f"d{n}"] = race(tmp_path, store_target, run_id, f"d{n}", verbs)
            result = await h.wait(run_id, timeout=60)
            events = await h.store.events(run_id)
    assert result.output == f"shipped {ROUNDS}"
    approved = [n for n in range(ROUNDS) if winners[f"d{n}"] == "approve"]
    ran = log.read_text().splitlines() if log.exists() else []
    assert ran == [f"deployed {n}" for n in approved]
    decided = {
        e.payload.call_id: e.payload.approved for e in events if e.type == "approval_decided"
    }
    assert decided == {call: verb == "approve" for call, verb in winners.items()}
    answers = {m.tool_call_id: m.content or "" for m in result.messages if m.role == "tool"}
    for call, verb in winners.items():
        assert answers[call].startswith("deployed") == (verb == "approve"), answers[call]


async def test_a_run_asks_about_each_call_however_many_were_denied_before(
    tmp_path: Path, store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race above can go to `deny` in every round; the run asks about every call still.

    Denied calls are failed calls, and six in a row would stop a run with the default
    limits (`repeated_failure`) before its next request: the deployer allows more.
    """
    log = tmp_path / "deploys.log"
    monkeypatch.setenv("AGENTS_LOG", str(log))
    async with Harness(Settings(home=tmp_path), store=store_target, agents=(deployer(),)) as h:
        run_id = await h.submit(deployer(), f"deploy {ROUNDS}")
        for n in range(ROUNDS):
            await until_waiting(h, run_id, f"d{n}")
            await h.deny(run_id, f"d{n}", reason=f"not build {n}", by="user:bob")
        result = await h.wait(run_id, timeout=30)
        decisions = await h.store.decisions(run_id)
    assert result.output == f"shipped {ROUNDS}"
    assert not log.exists()
    assert [(d.call_id, d.approved) for d in decisions] == [(f"d{n}", False) for n in range(ROUNDS)]
    answers = [m.content or "" for m in result.messages if m.role == "tool"]
    assert len(answers) == ROUNDS
    for n, answer in enumerate(answers):
        assert f"denied by user:bob (not build {n})" in answer, answer


async def test_the_python_api_raises_already_decided_for_the_loser(
    tmp_path: Path, store_target: str
) -> None:
    settings = Settings(home=tmp_path)
    async with (
        Harness(settings, store=store_target, agents=(deployer(),)) as owner,
        Harness(settings, store=store_target, execute=False) as other,
    ):
        run_id = await owner.submit(deployer(), "deploy 1")
        await until_waiting(owner, run_id, "d0")
        outcomes = await asyncio.gather(
            owner.deny(run_id, "d0", reason="not today", by="user:bob"),
            other.approve(run_id, "d0", by="user:alice"),
            return_exceptions=True,
        )
        result = await owner.wait(run_id, timeout=30)
        stored = await other.decision(run_id, "d0")
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(errors) == 1
    assert isinstance(errors[0], AlreadyDecided)
    assert stored is not None
    assert f"already decided: {'approved' if stored.approved else 'denied'} by {stored.by}" in str(
        errors[0]
    )
    tool = next(m for m in result.messages if m.role == "tool")
    assert (tool.content or "").startswith("deployed") == stored.approved
