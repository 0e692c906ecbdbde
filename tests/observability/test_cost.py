"""`harness cost` over a real batch of scripted runs: numbers checked against hand arithmetic.

The runs are real (Harness, SQLite, the loop, a Python tool); only the model is a
`FunctionModel` answering with fixed usage, behind the `ProfiledModel` of a profile whose
prices come from a `harness.toml`. `harness cost` runs as a subprocess on the same store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from harness import Agent, Harness, ModelRequest, tool
from harness.core import Usage
from harness.core.events import ModelResponded, payloads
from harness.core.usage import Prices
from harness.gateway.model import ModelResponse
from harness.gateway.profiled import ProfiledModel
from harness.runtime.settings import load_settings
from harness.store import open_store
from harness.testing import FakeOpenAIServer, FakeReply, FunctionModel, call, reply

HARNESS = str(Path(sys.executable).parent / "harness")
M = 1_000_000
CONFIG = """
[models.paid]
model = "fake"
base_url = "http://127.0.0.1:9/v1"
prices = { input = 2.0, output = 8.0, cached_input = 0.5 }

[models.mystery]
model = "fake"
base_url = "http://127.0.0.1:9/v1"
"""
# Every run: a request that calls `lookup`, then one that answers.
CALLING = Usage(input_tokens=1000, cached_tokens=400, output_tokens=50, requests=1)
ANSWERING = Usage(
    input_tokens=1500, cached_tokens=1000, output_tokens=100, reasoning_tokens=20, requests=1
)
# On `paid`, per million: uncached input $2, cached input $0.50, output $8.
CALLING_USD = ((1000 - 400) * 2.0 + 400 * 0.5 + 50 * 8.0) / M  # $0.0018
ANSWERING_USD = ((1500 - 1000) * 2.0 + 1000 * 0.5 + 100 * 8.0) / M  # $0.0023
RUN_USD = CALLING_USD + ANSWERING_USD  # $0.0041
# The answering request carried lookup's result; 1000 of its 1500 input tokens were cached,
# so each carried token costs 1/3 at $2 and 2/3 at $0.50 per million: $1 per million.
CARRIED_PER_TOKEN = (1 / 3 * 2.0 + 2 / 3 * 0.5) / M


@tool(side_effects="none")
def lookup(order: int) -> str:
    """Look up an order."""
    return f"order {order}: paid by card, shipped, refund requested twice " * 3


def answer(request: ModelRequest) -> ModelResponse:
    if request.messages[-1].role == "tool":
        return ModelResponse(message=reply("refunded"), finish_reason="stop", usage=ANSWERING)
    message = reply(None, call("lookup", {"order": 42}))
    return ModelResponse(message=message, finish_reason="tool_calls", usage=CALLING)


def agent(home: Path, name: str, profile: str) -> Agent:
    settings = load_settings(home)
    model = ProfiledModel(FunctionModel(answer), settings.profiles[profile])
    return Agent(name=name, model=model, tools=[lookup])


async def run_batch(home: Path) -> list[str]:
    """Three runs on `paid` (two refunds, one billing), one refund on `mystery`."""
    (home / "harness.toml").write_text(CONFIG)
    batch = [
        ("support", "paid", "refund"),
        ("support", "paid", "refund"),
        ("sales", "paid", "billing"),
        ("support", "mystery", "refund"),
    ]
    async with Harness(load_settings(home)) as harness:
        ids = []
        for name, profile, kind in batch:
            result = await harness.run(agent(home, name, profile), "refund?", task_type=kind)
            assert result.output == "refunded"
            ids.append(result.run_id)
    return ids


def cost(home: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("HARNESS_STORE", None)
    return subprocess.run(
        [HARNESS, "cost", *flags], cwd=home, env=env, capture_output=True, text=True, timeout=60
    )


def report(home: Path, *flags: str) -> dict[str, Any]:
    done = cost(home, "--json", *flags)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def lines(home: Path, *by: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    flags = [flag for dim in by for flag in ("--by", dim)]
    data = report(home, *flags)
    keys = [dim.replace("-", "_") for dim in by]
    return {tuple(line["key"][k] for k in keys): line for line in data["lines"]}


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], list[int]]:
    """The home of the batch, its run ids, and the stored tokens of each run's lookup result."""
    import asyncio

    home = tmp_path_factory.mktemp("home")
    ids = asyncio.run(run_batch(home))
    results = asyncio.run(result_tokens(home, ids))
    return home, ids, results


async def result_tokens(home: Path, ids: list[str]) -> list[int]:
    async with await open_store(home / "harness.db") as store:
        sizes = await store.message_tokens(ids, roles=["tool"])
    by_run = {m.run_id: m.tokens or 0 for m in sizes}
    return [by_run[run_id] for run_id in ids]


def test_cost_by_model_counts_each_request_at_its_profile_prices(
    batch: tuple[Path, list[str], list[int]],
) -> None:
    home, _, _ = batch
    by_model = lines(home, "model")
    paid = by_model[("paid",)]
    assert (paid["runs"], paid["completed_runs"], paid["requests"]) == (3, 3, 3 * 2)
    assert paid["tokens"] == {
        "input": 3 * (1000 + 1500),
        "output": 3 * (50 + 100),
        "cached": 3 * (400 + 1000),
        "reasoning": 3 * 20,
    }
    assert paid["usd"] == pytest.approx(3 * RUN_USD)
    assert paid["usd_per_completed_run"] == pytest.approx(RUN_USD)
    mystery = by_model[("mystery",)]
    assert (mystery["runs"], mystery["requests"]) == (1, 2)
    assert mystery["usd"] is None  # unknown, never 0
    assert mystery["usd_per_completed_run"] is None
    assert (mystery["usd_priced"], mystery["unpriced_requests"]) == (0, 2)


def test_the_total_of_a_window_with_an_unknown_price_is_unknown(
    batch: tuple[Path, list[str], list[int]],
) -> None:
    home, _, _ = batch
    total = report(home)["total"]
    assert (total["runs"], total["completed_runs"], total["requests"]) == (4, 4, 4 * 2)
    assert total["usd"] is None
    assert total["usd_priced"] == pytest.approx(3 * RUN_USD)
    assert total["tokens"]["input"] == 4 * (1000 + 1500)


def test_cost_by_task_type_and_by_agent_come_from_the_runs(
    batch: tuple[Path, list[str], list[int]],
) -> None:
    home, _, _ = batch
    by_type = lines(home, "task-type")
    assert by_type[("billing",)]["usd"] == pytest.approx(RUN_USD)
    refund = by_type[("refund",)]
    assert (refund["runs"], refund["requests"]) == (3, 3 * 2)
    assert refund["usd"] is None  # one of its runs was on the unpriced model
    assert refund["usd_priced"] == pytest.approx(2 * RUN_USD)
    by_agent = lines(home, "agent")
    assert by_agent[("sales",)]["usd"] == pytest.approx(RUN_USD)
    assert by_agent[("support",)]["runs"] == 3
    both = lines(home, "agent", "model")
    assert both[("support", "paid")]["usd"] == pytest.approx(2 * RUN_USD)
    assert both[("support", "mystery")]["usd"] is None
    assert both[("sales", "paid")]["usd_per_completed_run"] == pytest.approx(RUN_USD)
    assert len(both) == 3


def test_cost_by_day_groups_runs_by_their_utc_day(
    batch: tuple[Path, list[str], list[int]],
) -> None:
    home, _, _ = batch
    today = datetime.now(UTC).date().isoformat()
    by_day = lines(home, "day")
    assert list(by_day) == [(today,)]
    assert by_day[(today,)]["runs"] == 4


def test_cost_by_tool_is_its_results_in_later_requests_at_their_input_price(
    batch: tuple[Path, list[str], list[int]],
) -> None:
    home, _, results = batch
    paid_results = sum(results[:3])  # the tokens of lookup's result in each paid run
    lookup_line = lines(home, "tool", "model")
    paid = lookup_line[("lookup", "paid")]
    assert (paid["runs"], paid["calls"], paid["requests"]) == (3, 3, 3)
    assert paid["tokens"]["input"] == paid_results
    assert paid["tokens"]["cached"] == round(paid_results * 1000 / 1500)
    assert paid["usd"] == pytest.approx(paid_results * CARRIED_PER_TOKEN)
    assert paid["result_tokens"] == paid_results
    assert paid["seconds"] >= 0
    mystery = lookup_line[("lookup", "mystery")]
    assert mystery["usd"] is None
    assert mystery["tokens"]["input"] == results[3]
    overall = lines(home, "tool")[("lookup",)]
    assert (overall["calls"], overall["usd"]) == (4, None)
    assert overall["usd_priced"] == pytest.approx(paid_results * CARRIED_PER_TOKEN)


def test_the_table_shows_an_unknown_price_as_unknown(
    batch: tuple[Path, list[str], list[int]],
) -> None:
    home, _, _ = batch
    done = cost(home, "--by", "model")
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()}
    assert "unknown" in rows["mystery"]
    assert "$0.0123" in rows["paid"]  # 3 × $0.0041
    assert "$0.0041" in rows["paid"]  # per completed run
    assert "≥ $0.0123 (+2 unknown)" in rows["total"]
    assert "$0.00 " not in rows["mystery"]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--by", "colour"), "--by: no dimension 'colour'; use model, tool, task-type"),
        (("--by", "model", "--by", "model"), "--by: 'model' is named twice"),
        (("--since", "3 days"), "--since: '3 days' is neither a span (30m, 12h, 7d, 2w)"),
        (("--since", "2026-13-45"), "--since: '2026-13-45' is neither a span"),
    ],
)
def test_bad_flags_are_clear_errors(tmp_path: Path, flags: tuple[str, ...], said: str) -> None:
    done = cost(tmp_path, *flags)
    assert done.returncode == 2
    assert said in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "harness.db").exists()  # nothing was opened


class TenDaysAgo:
    """The clock of a store that lives ten days in the past."""

    def now(self) -> float:
        return time.time() - 10 * 86_400

    def monotonic(self) -> float:
        return time.monotonic()


async def test_since_keeps_only_the_runs_created_in_the_window(tmp_path: Path) -> None:
    (tmp_path / "harness.toml").write_text(CONFIG)
    now = time.time()
    async with (
        await open_store(tmp_path / "harness.db", clock=TenDaysAgo()) as past,
        Harness(load_settings(tmp_path), store=past) as harness,
    ):
        await harness.run(agent(tmp_path, "support", "paid"), "refund?")
    async with Harness(load_settings(tmp_path)) as harness:
        await harness.run(agent(tmp_path, "support", "paid"), "refund?")
    assert report(tmp_path)["total"]["runs"] == 2
    week = report(tmp_path, "--since", "7d")
    assert week["total"]["runs"] == 1
    assert week["total"]["usd"] == pytest.approx(RUN_USD)
    assert report(tmp_path, "--since", "30m")["total"]["runs"] == 1
    eleven_days_ago = datetime.fromtimestamp(now - 11 * 86_400, UTC).date().isoformat()
    assert report(tmp_path, "--since", eleven_days_ago)["total"]["runs"] == 2
    tomorrow = datetime.fromtimestamp(now + 86_400, UTC).date().isoformat()
    assert report(tmp_path, "--since", tomorrow)["total"]["runs"] == 0


async def test_a_request_is_charged_to_the_model_that_answered_after_a_fallback(
    tmp_path: Path,
) -> None:
    with (
        FakeOpenAIServer([FakeReply.error(503, "overloaded")]) as down,
        FakeOpenAIServer([FakeReply.text("ok", input_tokens=1000, output_tokens=100)]) as up,
    ):
        (tmp_path / "harness.toml").write_text(
            f'[models.first]\nmodel = "a"\nbase_url = "{down.base_url}"\nmax_retries = 0\n'
            'fallbacks = ["second"]\nprices = { input = 100.0, output = 100.0 }\n'
            f'[models.second]\nmodel = "b"\nbase_url = "{up.base_url}"\nmax_retries = 0\n'
            "prices = { input = 3.0, output = 15.0 }\n"
        )
        async with Harness(load_settings(tmp_path)) as harness:
            result = await harness.run(Agent(name="ops", model="first"), "hi?")
            events = [e async for e in harness.events(result.run_id)]
    assert result.output == "ok"
    (answered,) = payloads(events, ModelResponded)
    assert answered.model == "second"
    assert answered.prices == Prices(input=3.0, output=15.0)
    by_model = lines(tmp_path, "model")
    assert list(by_model) == [("second",)]
    assert by_model[("second",)]["usd"] == pytest.approx((1000 * 3.0 + 100 * 15.0) / M)
