"""`harness stats` over a real store, from a batch of scripted runs through a real Harness.

The batch (every number asserted below is counted by hand from it):

| run | agent | model | steps: tool calls (input tokens)                        | end            |
|-----|-------|-------|----------------------------------------------------------|----------------|
| r1  | calc  | alpha | 1: add ok (100) · 2: flaky error (200) · 3: answer (300)  | final_answer   |
| r2  | calc  | alpha | 1: add ok, add ok (110) · 2: answer (260)                 | final_answer   |
| r3  | calc  | alpha | 1: add ok (90) · 2: nope unknown (180) · 3: wrap-up (400) | max_steps (2)  |
| r4  | calc  | alpha | 1: add ok, add not run (120) · 2: wrap-up (240)           | max_tool_calls |
| r5  | other | beta  | 1: the model call raises                                  | error          |
| r6  | other | beta  | 1: answer (50)                                            | final_answer   |
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness import Agent, Harness, Limits, ModelRequest, tool
from harness.core import Message, Usage
from harness.core.events import (
    EventPayload,
    RunFinished,
    RunPaused,
    RunRecovered,
    RunResumed,
    StepStarted,
)
from harness.errors import ConfigError, ToolError
from harness.gateway.model import ModelResponse
from harness.observability._window import parse_since
from harness.observability.stats import Spread, Stats, compute_stats, percentile, stats_to_dict
from harness.runtime import Settings
from harness.store import NewEvent, NewRun, StepWrite, open_store
from harness.testing import FunctionModel, call, reply

HARNESS = str(Path(sys.executable).parent / "harness")
LATENCY_S = 0.02


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(side_effects="none")
def flaky(x: int) -> int:
    """Fail for every input."""
    raise ToolError(f"{x} is not accepted", hint="give up")


def model(name: str, turns: Sequence[tuple[Message, int] | Exception]) -> FunctionModel:
    """A model whose n-th reply is `turns[n]`, with exactly that many input tokens."""

    def answer(request: ModelRequest) -> ModelResponse:
        turn = turns[len(scripted.requests) - 1]
        if isinstance(turn, Exception):
            raise turn
        message, tokens = turn
        return ModelResponse(
            message=message,
            finish_reason="tool_calls" if message.tool_calls else "stop",
            usage=Usage(input_tokens=tokens, output_tokens=7, requests=1),
            model=name,
            request_id=request.request_id,
        )

    scripted = FunctionModel(answer, name=name, latency_s=LATENCY_S)
    return scripted


def batch() -> list[Agent]:
    two = [call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4})]
    calc = {"name": "calc", "tools": [add, flaky]}
    return [
        Agent(
            **calc,
            model=model(
                "alpha",
                [
                    (reply(None, call("add", {"a": 2, "b": 3})), 100),
                    (reply(None, call("flaky", {"x": 1})), 200),
                    (reply("done"), 300),
                ],
            ),
        ),
        Agent(**calc, model=model("alpha", [(reply(None, *two), 110), (reply("7"), 260)])),
        Agent(
            **calc,
            limits=Limits(max_steps=2),
            model=model(
                "alpha",
                [
                    (reply(None, call("add", {"a": 1, "b": 1})), 90),
                    (reply(None, call("nope", {})), 180),
                    (reply("stopped early"), 400),
                ],
            ),
        ),
        Agent(
            **calc,
            limits=Limits(max_tool_calls=1),
            model=model("alpha", [(reply(None, *two), 120), (reply("one call only"), 240)]),
        ),
        Agent(name="other", model=model("beta", [RuntimeError("the model broke")])),
        Agent(name="other", model=model("beta", [(reply("hi"), 50)])),
    ]


async def run_batch(home: Path, store: str | None = None) -> None:
    async with Harness(Settings(home=home), store=store) as harness:
        for agent in batch():
            task_type = "refund" if agent.name == "other" else None  # the last two runs
            await harness.run(agent, "go", task_type=task_type)


async def stats_of(target: str, **filters: Any) -> Stats:
    store = await open_store(target)
    try:
        return await compute_stats(store, **filters)
    finally:
        await store.close()


@pytest.fixture
async def store(store_target: str, tmp_path: Path) -> str:
    await run_batch(tmp_path, store_target)
    return store_target


async def test_the_batch_adds_up_to_the_numbers_counted_by_hand(store: str) -> None:
    stats = await stats_of(store)
    assert (stats.runs, stats.steps, stats.tool_calls) == (6, 12, 7)
    assert stats.tool_calls_per_step == pytest.approx(7 / 12)
    tools = {t.tool: t for t in stats.tools}
    assert [t.tool for t in stats.tools] == ["add", "flaky", "nope"]  # most called first
    add_, flaky_, nope = tools["add"], tools["flaky"], tools["nope"]
    assert (add_.calls, add_.ok, add_.failed, add_.not_run) == (5, 5, 0, 1)
    assert add_.success_rate == 1.0
    assert add_.calls_per_step == pytest.approx(5 / 12)
    assert add_.duration_s.count == 5
    assert (flaky_.calls, flaky_.ok, flaky_.failed, flaky_.success_rate) == (1, 0, 1, 0.0)
    assert (nope.calls, nope.failed, nope.success_rate) == (1, 1, 0.0)
    tokens = [(p.step, p.runs, p.median_input_tokens) for p in stats.context_tokens]
    # step 1: 100 110 90 120 50 · step 2: 200 260 180 240 · step 3: 300 400
    assert tokens == [(1, 5, 100.0), (2, 4, 220.0), (3, 2, 350.0)]
    terminations = {s.name: (s.count, s.share) for s in stats.terminations}
    assert terminations == {
        "final_answer": (3, 0.5),
        "max_steps": (1, pytest.approx(1 / 6)),
        "max_tool_calls": (1, pytest.approx(1 / 6)),
        "error": (1, pytest.approx(1 / 6)),
    }
    assert stats.terminations[0].name == "final_answer"
    assert {s.name: s.count for s in stats.states} == {"COMPLETED": 5, "FAILED": 1}


async def test_latencies_cover_every_step_and_model_call(store: str) -> None:
    stats = await stats_of(store)
    assert stats.step_latency_s.count == 12  # the failed run's only step ends at run_failed
    step_p50, step_p95 = stats.step_latency_s.p50, stats.step_latency_s.p95
    assert step_p50 is not None
    assert step_p95 is not None
    assert LATENCY_S <= step_p50 <= step_p95
    models = {m.model: m.duration_s for m in stats.models}
    assert {name: spread.count for name, spread in models.items()} == {"alpha": 10, "beta": 1}
    alpha_p50, alpha_p95 = models["alpha"].p50, models["alpha"].p95
    assert alpha_p50 is not None
    assert alpha_p95 is not None
    assert LATENCY_S <= alpha_p50 <= alpha_p95


async def test_filters_by_agent_window_and_task_type(store: str) -> None:
    other = await stats_of(store, agent="other")
    assert (other.runs, other.steps, other.tool_calls, other.tools) == (2, 2, 0, ())
    assert other.tool_calls_per_step == 0.0
    assert {s.name: s.count for s in other.terminations} == {"final_answer": 1, "error": 1}
    assert [(p.step, p.median_input_tokens) for p in other.context_tokens] == [(1, 50.0)]
    later = await stats_of(store, since=parse_since("2099-01-01", now=0).start)
    assert (later.runs, later.steps, later.tools, later.terminations) == (0, 0, (), ())
    assert later.tool_calls_per_step is None
    assert (await stats_of(store, since=parse_since("1h", now=time.time()).start)).runs == 6
    refunds = await stats_of(store, task_type="refund")
    assert (refunds.runs, refunds.steps) == (2, 2)  # the two runs of `other`
    assert {s.name: s.count for s in refunds.terminations} == {"final_answer": 1, "error": 1}
    assert (await stats_of(store, task_type="billing")).runs == 0


async def test_the_json_form_has_stable_keys(store: str) -> None:
    data = json.loads(json.dumps(stats_to_dict(await stats_of(store))))
    assert list(data) == [
        "since",
        "agent",
        "task_type",
        "runs",
        "steps",
        "tool_calls",
        "tool_calls_per_step",
        "tools",
        "context_tokens",
        "step_latency_s",
        "models",
        "terminations",
        "states",
    ]
    assert list(data["tools"][0]) == [
        "tool",
        "calls",
        "ok",
        "failed",
        "not_run",
        "calls_per_step",
        "success_rate",
        "duration_s",
    ]
    assert list(data["tools"][0]["duration_s"]) == ["count", "p50", "p95"]
    assert data["context_tokens"][1] == {"step": 2, "runs": 4, "median_input_tokens": 220.0}
    assert data["terminations"][0] == {"name": "final_answer", "count": 3, "share": 0.5}


def test_percentiles_interpolate_between_the_nearest_values() -> None:
    assert percentile([], 0.5) is None
    assert percentile([7.0], 0.95) == 7.0
    assert percentile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.95) == pytest.approx(3.85)
    assert percentile([float(v) for v in range(1, 102)], 0.95) == pytest.approx(96.0)


@pytest.mark.parametrize(
    ("text", "start", "words"),
    [
        ("30m", 10_000 - 1800, "in the last 30m"),
        ("12h", 100_000 - 43_200, "in the last 12h"),
        ("7d", 1_000_000 - 604_800, "in the last 7d"),
        ("2w", 2_000_000 - 1_209_600, "in the last 2w"),
        ("1970-01-02", 86_400, "since 1970-01-02"),
        ("1970-01-01T01:00:00+01:00", 0, "since 1970-01-01T01:00:00+01:00"),
    ],
)
def test_since_takes_spans_and_iso_dates(text: str, start: float, words: str) -> None:
    now = {"30m": 10_000, "12h": 100_000, "7d": 1_000_000, "2w": 2_000_000}.get(text, 0)
    since = parse_since(text, now=now)
    assert (since.start, since.text) == (start, words)


@pytest.mark.parametrize("text", ["yesterday", "7", "7y", "-3d", "0d", "", "2026-13-01"])
def test_since_refuses_anything_else(text: str) -> None:
    with pytest.raises(ConfigError, match="--since"):
        parse_since(text, now=1_000_000)


# The command line, over a SQLite store under HARNESS_HOME.


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "120"}
    env.pop("HARNESS_STORE", None)
    return subprocess.run(
        [HARNESS, "stats", *args], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
async def home(tmp_path: Path) -> Path:
    await run_batch(tmp_path)
    return tmp_path


def test_the_screen_draws_bars_and_a_sparkline(home: Path) -> None:
    done = cli(home)
    assert done.returncode == 0, done.stderr
    screen = done.stdout
    lines = screen.splitlines()
    assert lines[0] == "6 runs in the last 7d · 12 steps · 7 tool calls (0.58 per step)"
    assert lines[1] == "states  COMPLETED 5 · FAILED 1"
    final = next(line for line in lines if line.startswith("final_answer"))
    assert final.split()[1:] == ["█" * 10 + "·" * 10, "3", "50%"]
    add_row = next(line for line in lines if line.startswith("add "))
    assert add_row.split()[1:5] == ["5", "0.42", "█" * 20, "100%"]
    flaky_row = next(line for line in lines if line.startswith("flaky "))
    assert flaky_row.split()[1:5] == ["1", "0.08", "░" * 20, "0%"]
    assert add_row.split()[-1] == "1"  # not run
    # medians 100, 220, 350 on a scale from 0 to 350: ▁ + round(7x/350)
    spark = next(line for line in lines if "step 1: 100 → step 3: 350" in line)
    assert spark.split()[0] == "▃▅█"
    assert any(line.startswith("model alpha") and line.split()[2] == "10" for line in lines)


def test_json_output(home: Path) -> None:
    done = cli(home, "--json", "--agent", "calc", "--since", "1h")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["window"] == "in the last 1h"
    assert (data["agent"], data["runs"], data["steps"], data["tool_calls"]) == ("calc", 4, 10, 7)
    assert [t["tool"] for t in data["tools"]] == ["add", "flaky", "nope"]


def test_an_empty_window_says_so(home: Path, tmp_path: Path) -> None:
    empty = cli(tmp_path / "fresh")
    assert (empty.returncode, empty.stdout.strip()) == (0, "no runs in the last 7d")
    nobody = cli(home, "--agent", "nobody", "--since", "30m")
    assert nobody.stdout.strip() == "no runs in the last 30m · agent nobody"
    typed = cli(home, "--task-type", "billing", "--since", "2026-01-01")
    assert typed.stdout.strip() == "no runs since 2026-01-01 · task type billing"
    as_json = json.loads(cli(tmp_path / "fresh", "--json").stdout)
    assert (as_json["runs"], as_json["tools"], as_json["tool_calls_per_step"]) == (0, [], None)


@pytest.mark.parametrize("value", ["yesterday", "0h", "3x"])
def test_a_bad_since_is_a_clear_error(tmp_path: Path, value: str) -> None:
    done = cli(tmp_path, "--since", value)
    assert done.returncode == 2
    assert done.stdout == ""
    assert f"error: --since: {value!r}" in done.stderr
    assert not (tmp_path / "harness.db").exists()  # refused before the store is opened


def test_an_unknown_flag_is_a_usage_error(tmp_path: Path) -> None:
    done = cli(tmp_path, "--by", "tool")
    assert done.returncode == 2
    assert "--by" in done.stderr


# Where a step ends.


async def test_a_step_ends_at_the_next_step_a_pause_or_the_end(store_target: str) -> None:
    def at(ts: float, payload: EventPayload) -> NewEvent:
        return NewEvent(payload=payload, ts=ts)

    store = await open_store(store_target)
    try:
        await store.create_run(NewRun(run_id="r", agent="ops"))
        timeline = [
            at(10, StepStarted(step=1)),
            at(13, StepStarted(step=2)),
            at(14, RunPaused(at="step boundary")),
            at(100, RunResumed()),
            at(101, StepStarted(step=3)),
            # step 3 was cut short by a takeover: not timed
            at(500, RunRecovered(previous_owner="dead", state="RUNNING", owner="w2")),
            at(501, StepStarted(step=3)),
            at(
                503,
                RunFinished(output="x", termination="final_answer", complete=True, usage=Usage()),
            ),
        ]
        await store.append(StepWrite(run_id="r", events=timeline))
        stats = await compute_stats(store)
    finally:
        await store.close()
    assert stats.steps == 4
    # 13 - 10, 14 - 13 and 503 - 501 seconds
    assert stats.step_latency_s == Spread(count=3, p50=2.0, p95=pytest.approx(2.9))


async def test_time_paused_is_no_step_time(tmp_path: Path) -> None:
    requests = 0

    def count_then_answer(request: ModelRequest) -> Message:
        nonlocal requests
        requests += 1
        return reply(None, call("add", {"a": 1, "b": 1})) if requests < 3 else reply("2")

    model = FunctionModel(count_then_answer, latency_s=0.15)
    agent = Agent(name="pausable", model=model, tools=[add])
    async with Harness(Settings(home=tmp_path)) as harness:
        run_id = await harness.submit(agent, "count")
        while not model.requests:  # step 1 is under way
            await asyncio.sleep(0.005)
        await harness.pause(run_id)
        while (await harness.get(run_id)).state != "PAUSED":
            await asyncio.sleep(0.01)
        await asyncio.sleep(1.0)
        await harness.resume(run_id)
        await harness.wait(run_id, timeout=10)
        stats = await compute_stats(harness.store)
        events = [e async for e in harness.events(run_id) if e.type != "model_delta"]
    kinds = [e.type for e in events]
    at = {e.type: e.ts for e in events}  # the run was paused and resumed once
    steps = [i for i, kind in enumerate(kinds) if kind == "step_started"]
    assert len(steps) == 3
    assert steps[0] < kinds.index("run_paused") < steps[-1]  # paused between two steps
    assert stats.steps == 3
    assert stats.step_latency_s.count == 3
    assert stats.step_latency_s.p95 is not None
    # Every step ends by the pause and starts after the resume: the longest step fits in
    # the run's time less the time it was paused.
    first_step = events[steps[0]].ts
    unpaused = (at["run_finished"] - first_step) - (at["run_resumed"] - at["run_paused"])
    assert stats.step_latency_s.p95 <= unpaused + 1e-6
