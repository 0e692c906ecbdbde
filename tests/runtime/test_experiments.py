"""A/B experiments end to end: 400 runs split across two fake OpenAI-compatible servers.

Server A completes 80 % of tasks and server B 50 % (decided by the task's number), so the
report has something to find; its numbers are checked against arithmetic done here.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.errors import ConfigError
from harness.observability import trace_of
from harness.observability.cost import read_cost
from harness.observability.experiments import experiment_report
from harness.observability.metrics import MetricsSubscriber
from harness.runtime.harness import Harness, stored_context
from harness.runtime.settings import load_settings
from harness.store import ExperimentStop
from harness.testing import FakeOpenAIServer, FakeReply

HARNESS = str(Path(sys.executable).parent / "harness")
RUNS = 400


def answers(completes: int) -> Any:
    """Complete task N when N % 10 < `completes`; otherwise call a tool that does not exist."""

    def reply(body: dict[str, Any]) -> FakeReply:
        number = int(body["messages"][1]["content"].split()[-1])
        if number % 10 < completes:
            return FakeReply.text(f"done {number}")
        return FakeReply.tool_call("no_such_tool", {})

    return reply


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    with FakeOpenAIServer(answers(8)) as a, FakeOpenAIServer(answers(5)) as b:
        yield a, b


def write_file(home: Path, a: FakeOpenAIServer, b: FakeOpenAIServer, extra: str = "") -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "harness.toml").write_text(
        f"""
[models.alpha]
model = "alpha"
base_url = "{a.base_url}"
prices = {{ input = 1.0, output = 2.0 }}

[models.beta]
model = "beta"
base_url = "{b.base_url}"
prices = {{ input = 0.5, output = 1.0 }}

[agents.support]
model = "alpha"
tools = []
limits = {{ max_steps = 1 }}

[experiments.refund-model]
task_type = "refund"
variants = {{ a = {{ model = "alpha", weight = 50 }}, b = {{ model = "beta", weight = 50 }} }}
{extra}
"""
    )


@pytest.fixture
def home(
    tmp_path: Path,
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer],
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    for name in ("HARNESS_MODEL", "HARNESS_STORE"):
        monkeypatch.delenv(name, raising=False)
    write_file(tmp_path, *servers)
    return tmp_path


@pytest.fixture
async def harness(home: Path) -> AsyncIterator[Harness]:
    metrics = MetricsSubscriber()
    async with Harness(load_settings(home), store=str(home / "harness.db"), metrics=metrics) as h:
        yield h


def chats(server: FakeOpenAIServer) -> int:
    return sum(1 for r in server.requests if r.path.endswith("/chat/completions"))


async def run_all(h: Harness, tasks: range, **options: Any) -> list[str]:
    ids = [await h.submit("support", f"task {n}", task_type="refund", **options) for n in tasks]
    for run_id in ids:
        await h.wait(run_id, timeout=120)
    return ids


async def test_four_hundred_runs_split_evenly_and_the_report_matches_the_arithmetic(
    harness: Harness, home: Path, servers: tuple[FakeOpenAIServer, FakeOpenAIServer]
) -> None:
    before = {v: chats(server) for v, server in zip("ab", servers, strict=True)}
    ids = await run_all(harness, range(RUNS))
    requests = {v: chats(s) - before[v] for v, s in zip("ab", servers, strict=True)}
    records = {r.run_id: r for r in await harness.list(limit=1000)}
    assert set(records) == set(ids)
    number = {run_id: n for n, run_id in enumerate(ids)}
    by_variant = {v: [i for i in ids if records[i].variant == v] for v in ("a", "b")}
    assert len(by_variant["a"]) + len(by_variant["b"]) == RUNS
    assert 0.42 * RUNS <= len(by_variant["a"]) <= 0.58 * RUNS
    assert all(records[i].experiment == "refund-model" for i in ids)
    # each variant went to its own server with its own model
    assert {records[i].model for i in by_variant["a"]} == {"alpha"}
    assert {records[i].model for i in by_variant["b"]} == {"beta"}

    report = await experiment_report(harness.store, "refund-model", ["a", "b"])
    per_completion = {"a": 8, "b": 5}
    price = {"a": (10 * 1.0 + 5 * 2.0) / 1e6, "b": (10 * 0.5 + 5 * 1.0) / 1e6}
    for shown in report.variants:
        runs = by_variant[shown.variant]
        n = len(runs)
        k = sum(1 for i in runs if number[i] % 10 < per_completion[shown.variant])
        p = k / n
        z = 1.959963984540054
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        assert (shown.runs, shown.ended, shown.completed) == (n, n, k)
        assert shown.completion_rate == pytest.approx(p)
        assert shown.interval == pytest.approx((centre - half, centre + half))
        assert shown.terminations == dict(
            Counter({"final_answer": k, "max_steps": n - k}).most_common()
        )
        # a completed run answers in step 1; a failing one starts step 2 and hits max_steps
        steps = [1.0] * k + [2.0] * (n - k)
        assert shown.steps_mean == pytest.approx(sum(steps) / n)
        assert shown.steps_p50 == statistics.median(steps)
        assert shown.steps_p95 == statistics.quantiles(steps, n=20, method="inclusive")[18]
        # one request (10 + 5 tokens) per step; the failing runs' second step asks again
        calls = k + 2 * (n - k)
        assert requests[shown.variant] == calls
        assert shown.tokens_per_run == pytest.approx(15 * calls / n)
        assert shown.cost_usd == pytest.approx(calls * price[shown.variant])
        assert shown.cost_per_run == pytest.approx(calls * price[shown.variant] / n)
        assert shown.cost_per_completed == pytest.approx(calls * price[shown.variant] / k)
        assert shown.latency_p50_s is not None
        assert shown.latency_p95_s is not None
        assert 0 <= shown.latency_p50_s <= shown.latency_p95_s
    a, b = report.variants
    pooled = (a.completed + b.completed) / RUNS
    z_by_hand = (a.completed / a.ended - b.completed / b.ended) / math.sqrt(
        pooled * (1 - pooled) * (1 / a.ended + 1 / b.ended)
    )
    assert report.significance.statistic == pytest.approx(z_by_hand)
    assert report.significance.p_value == pytest.approx(math.erfc(abs(z_by_hand) / math.sqrt(2)))
    assert report.significance.significant  # 80 % against 50 % over 400 runs
    assert report.significance.line.startswith("completion rate a ")
    assert "significant at 95 %" in report.significance.line

    # the variant is carried by events, metrics, traces and cost
    some = by_variant["b"][0]
    events = await harness.store.events(some)
    kinds = {e.type: e.payload for e in events}
    for kind in ("run_submitted", "run_started"):
        assert (kinds[kind].experiment, kinds[kind].variant) == ("refund-model", "b")  # type: ignore[attr-defined]
    spans = trace_of(some, events, stored_context(records[some]))
    run_span = next(s.span for s in spans if s.span.name.startswith("invoke_agent"))
    assert run_span.attributes["harness.experiment"] == "refund-model"
    assert run_span.attributes["harness.experiment.variant"] == "b"
    assert harness.metrics is not None
    text = (await harness.metrics.render()).decode()
    for v in report.variants:
        line = (
            'harness_experiment_runs_finished_total{experiment="refund-model",'
            f'termination="final_answer",variant="{v.variant}"}} {float(v.completed)}'
        )
        assert line in text
    cost = await read_cost(harness.store, by=("variant",))
    lines = {line.key["variant"]: line for line in cost.lines}
    assert {k: lines[k].runs for k in lines} == {
        "refund-model/a": len(by_variant["a"]),
        "refund-model/b": len(by_variant["b"]),
    }
    assert lines["refund-model/b"].usd_priced == pytest.approx(b.cost_usd)

    # the command line reads the same store
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("HARNESS_STORE", None)
    shown = subprocess.run(
        [HARNESS, "experiments", "report", "refund-model", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == json.loads(json.dumps(report.to_dict()))
    table = subprocess.run(
        [HARNESS, "experiments", "report", "refund-model"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout
    assert report.significance.line in table
    assert f"a: final_answer {a.completed}, max_steps {a.ended - a.completed}" in table


async def test_a_callers_key_keeps_its_variant(
    home: Path, servers: tuple[FakeOpenAIServer, FakeOpenAIServer]
) -> None:
    write_file(home, *servers)
    text = (
        (home / "harness.toml")
        .read_text()
        .replace('task_type = "refund"', 'task_type = "refund"\nkey = "user"')
    )
    (home / "harness.toml").write_text(text)
    async with Harness(load_settings(home), store=str(home / "harness.db")) as h:
        users = [f"user-{n}" for n in range(20)]
        ids = {
            u: [
                await h.submit("support", f"task {n}", task_type="refund", experiment_key=u)
                for n in range(4)
            ]
            for u in users
        }
        with pytest.raises(ConfigError, match="pass experiment_key"):
            await h.submit("support", "task 1", task_type="refund")
        for run_ids in ids.values():
            for run_id in run_ids:
                await h.wait(run_id, timeout=60)
        variants = {u: {(await h.get(r)).variant for r in run_ids} for u, run_ids in ids.items()}
    assert all(len(seen) == 1 for seen in variants.values())
    assert {next(iter(seen)) for seen in variants.values()} == {"a", "b"}


async def test_a_stopped_experiment_sends_every_run_to_the_kept_variant(
    harness: Harness, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await harness.store.stop_experiment(
        ExperimentStop(experiment="refund-model", keep="b", by="user:t")
    )
    ids = await run_all(harness, range(60))
    assert {(await harness.get(i)).variant for i in ids} == {"b"}
    # stopped in the file (here through the environment): every run gets that variant
    monkeypatch.setenv("HARNESS_EXPERIMENTS__REFUND_MODEL__KEEP", "a")
    async with Harness(load_settings(home), store=str(home / "harness.db")) as h:
        kept = await run_all(h, range(60))
        assert {(await h.get(i)).variant for i in kept} == {"a"}


def test_stop_and_list_from_the_command_line(home: Path) -> None:
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("HARNESS_STORE", None)

    def harness(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [HARNESS, *args], env=env, capture_output=True, text=True, timeout=60, check=False
        )

    bad = harness("experiments", "stop", "refund-model", "--keep", "c")
    assert bad.returncode == 2
    assert "has no variant 'c' (variants: a, b)" in " ".join(bad.stderr.split())
    assert "running" in harness("experiments", "list").stdout
    done = harness("experiments", "stop", "refund-model", "--keep", "b")
    assert done.returncode == 0, done.stderr
    listed = json.loads(harness("experiments", "list", "--json").stdout)
    assert listed["status"].startswith("stopped: all to b (by user:")
    assert [v["name"] for v in listed["variants"]] == ["a", "b"]
