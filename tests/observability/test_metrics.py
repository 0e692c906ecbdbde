"""Prometheus metrics of a scripted batch through a real Harness on SQLite, read over HTTP.

Every model answers with known usage, so the counts and sums on the page are computed by
hand from the script: tokens by kind, cost, tool calls by status, runs by termination,
histogram counts. Retries, fallbacks and compactions come from the real wrappers and the
real window manager; only the models are fakes.
"""

import asyncio
import sys
from collections import Counter
from pathlib import Path

from harness import Agent, Harness, Limits, Message, ModelRequest, ModelResponse, Usage, tool
from harness.core.events import ContextCompacted, payloads
from harness.errors import ModelAPIError, ToolError
from harness.gateway.wrappers import FallbackModel, RetryingModel
from harness.memory import ContextPolicy
from harness.observability.metrics import CONTENT_TYPE, MetricsSubscriber
from harness.observability.serve import MetricsServer
from harness.runtime import Settings
from harness.testing import FunctionModel, call, reply

from .scrape import parse, scrape

USAGE = Usage(
    input_tokens=100, output_tokens=20, cached_tokens=30, reasoning_tokens=5, requests=1,
    cost_usd=0.25,
)  # fmt: skip
sys.path.insert(0, str(Path(__file__).parents[1] / "runtime" / "processes"))
from kill_agents import sleeper  # noqa: E402
from owner_process import OwnerProcess  # noqa: E402

SUMMARY_PROMPTS = ("You compress the history", "An AI agent's context window")


@tool(side_effects="none")
def lookup(city: str) -> str:
    """Look up a city."""
    return f"{city}: sunny"


@tool(side_effects="none")
def explode(city: str) -> str:
    """Always refuses."""
    raise ToolError(f"no data for {city}", hint="try another city")


@tool(side_effects="none")
def inspect(size: int) -> str:
    """Return `size` characters."""
    return ("The build finished after the second attempt. " * (size // 40 + 1))[:size]


def answered(message: Message, usage: Usage = USAGE) -> ModelResponse:
    finish = "tool_calls" if message.tool_calls else "stop"
    return ModelResponse(message=message, finish_reason=finish, usage=usage)


def asked_first(request: ModelRequest) -> bool:
    return request.messages[-1].role == "user"


def ops_model() -> FunctionModel:
    """Calls lookup and explode together, then answers: two model calls per run."""

    def act(request: ModelRequest) -> ModelResponse:
        if asked_first(request):
            calls = (call("lookup", {"city": "Oslo"}), call("explode", {"city": "Oslo"}))
            return answered(reply(None, *calls))
        return answered(reply("Oslo is sunny"))

    return FunctionModel(act, name="ops-model")


def stuck_model() -> FunctionModel:
    """Looks up forever; its wrap-up turn (no tools offered) answers."""

    def act(request: ModelRequest) -> ModelResponse:
        if not request.tools:
            return answered(reply("I ran out of steps"))
        return answered(reply(None, call("lookup", {"city": "Rome"})))

    return FunctionModel(act, name="stuck-model")


def flaky_model() -> RetryingModel:
    """Fails once with a 503, then answers: one retry."""
    failures = [ModelAPIError("overloaded", status=503, retryable=True)]

    def act(request: ModelRequest) -> ModelResponse:
        if failures:
            raise failures.pop()
        return answered(reply("fine after a retry"))

    return RetryingModel(FunctionModel(act, name="flaky-model"), max_retries=2, base_delay_s=0)


def falling_model() -> FallbackModel:
    def down(request: ModelRequest) -> ModelResponse:
        raise ModelAPIError("internal error", status=500, retryable=True)

    spare = FunctionModel(lambda r: answered(reply("from the spare")), name="spare-model")
    return FallbackModel([FunctionModel(down, name="down-model"), spare])


def broken_model() -> FunctionModel:
    def act(request: ModelRequest) -> ModelResponse:
        raise ModelAPIError("bad key", status=401, retryable=False)

    return FunctionModel(act, name="broken-model")


def compacting_model(issued: list[Usage]) -> FunctionModel:
    """Inspects 3000 characters 10 times in a 2500-token window; every usage it reports is
    kept in `issued` (summary requests included)."""
    inspected: list[int] = []

    def act(request: ModelRequest) -> ModelResponse:
        tokens = sum(len(m.content or "") for m in request.messages) // 4
        usage = Usage(input_tokens=tokens, output_tokens=7, requests=1)
        issued.append(usage)
        if (request.messages[0].content or "").startswith(SUMMARY_PROMPTS):
            return answered(reply("The agent inspected files; all were prose."), usage)
        if len(inspected) >= 10 or not request.tools:
            return answered(reply("inspected"), usage)
        inspected.append(1)
        return answered(reply(None, call("inspect", {"size": 3000})), usage)

    return FunctionModel(act, name="long-model")


async def run_batch(h: Harness, issued: list[Usage]) -> None:
    agents = [
        *(Agent(name="ops", model=ops_model(), tools=[lookup, explode]) for _ in range(3)),
        Agent(name="stuck", model=stuck_model(), tools=[lookup], limits=Limits(max_steps=2)),
        Agent(name="retrier", model=flaky_model()),
        Agent(name="falls", model=falling_model()),
        Agent(name="broken", model=broken_model()),
        Agent(
            name="long",
            model=compacting_model(issued),
            tools=[inspect],
            context=ContextPolicy(
                context_window=2500, trim_at=0.5, summarize_at=0.5, keep_last_turns=1
            ),
        ),
    ]
    results = await asyncio.gather(
        *(h.run(a, f"task {i}", timeout=60) for i, a in enumerate(agents))
    )
    assert [r.termination for r in results] == [
        "final_answer", "final_answer", "final_answer", "max_steps", "final_answer",
        "final_answer", "error", "final_answer",
    ]  # fmt: skip


async def test_a_scripted_batch_is_counted_exactly(tmp_path: Path) -> None:
    issued: list[Usage] = []
    async with Harness(Settings(home=tmp_path), store=str(tmp_path / "h.db"), metrics=True) as h:
        assert h.metrics is not None
        async with MetricsServer(h.metrics.render, CONTENT_TYPE, port=0) as server:
            await run_batch(h, issued)
            page = await scrape(server.url)
            events = [e for r in await h.list(limit=100) for e in await h.store.events(r.run_id)]

    assert page.content_type == CONTENT_TYPE
    runs = "harness_runs_finished_total"
    assert page.value(runs, agent="ops", termination="final_answer", task_type="") == 3
    assert page.value(runs, agent="stuck", termination="max_steps") == 1
    assert page.value(runs, agent="broken", termination="error") == 1
    assert page.total(runs) == 8
    assert page.value("harness_runs_in_flight") == 0
    assert page.value("harness_runs_pending") == 0

    # tokens by kind and cost: 6 calls of ops-model, 3 of stuck-model (2 steps, wrap-up)
    tokens = "harness_model_tokens_total"
    for model, calls in (("ops-model", 6), ("stuck-model", 3), ("spare-model", 1)):
        assert page.value(tokens, model=model, kind="input") == 100 * calls
        assert page.value(tokens, model=model, kind="output") == 20 * calls
        assert page.value(tokens, model=model, kind="cached") == 30 * calls
        assert page.value(tokens, model=model, kind="reasoning") == 5 * calls
        assert page.value("harness_model_cost_usd_total", model=model) == 0.25 * calls
        assert page.value("harness_model_call_duration_seconds_count", model=model) == calls
        assert page.value("harness_context_tokens_count", model=model) == calls
        assert page.value("harness_context_tokens_sum", model=model) == 100 * calls
    assert page.value(tokens, model="flaky-model", kind="input") == 100
    assert page.value(tokens, model="down-model", kind="input") == 0  # it never answered
    # the compacting run: every usage it reported, its summary requests included
    assert page.value(tokens, model="long-model", kind="input") == sum(
        u.input_tokens for u in issued
    )
    assert page.value(tokens, model="long-model", kind="output") == 7 * len(issued)

    # retries and fallbacks by model
    assert page.value("harness_model_retries_total", model="flaky-model") == 1
    fallback = {"from_model": "down-model", "to_model": "spare-model", "reason": "error"}
    assert page.value("harness_model_fallbacks_total", **fallback) == 1
    assert page.total("harness_model_fallbacks_total") == 1

    # tool calls by tool and status; durations of those that ran
    calls = "harness_tool_calls_total"
    assert page.value(calls, tool="lookup", status="ok") == 3 + 2
    assert page.value(calls, tool="explode", status="tool_error") == 3
    assert page.value(calls, tool="inspect", status="ok") == 10
    assert page.total(calls) == 18
    assert page.value("harness_tool_duration_seconds_count", tool="lookup") == 5
    assert page.value("harness_tool_duration_seconds_count", tool="explode") == 3

    # compactions by tier, and steps: as many as the store recorded
    tiers = Counter(c.tier for c in payloads(events, ContextCompacted))
    assert tiers["summarize"] >= 1, tiers  # summaries were paid for  # summaries were paid for
    assert len(issued) > 11  # 10 inspections and the answer, and the summary requests
    for tier, count in tiers.items():
        assert page.value("harness_context_compactions_total", tier=tier) == count
    assert page.total("harness_context_compactions_total") == sum(tiers.values())
    steps = sum(1 for e in events if e.type == "step_started")
    assert page.value("harness_step_duration_seconds_count", agent="ops") == 6
    assert page.value("harness_step_duration_seconds_count", agent="stuck") == 3
    assert page.total("harness_step_duration_seconds_count") == steps
    bucket = page.value("harness_step_duration_seconds_bucket", agent="ops", le="+Inf")
    assert bucket == 6


def quick_agent(i: int) -> Agent:
    model = FunctionModel(lambda r: answered(reply(f"done {i}")), name=f"model-{i}")
    return Agent(name=f"agent-{i}", model=model)


async def test_labels_stay_bounded_however_many_runs_agents_and_models(tmp_path: Path) -> None:
    metrics = MetricsSubscriber(max_label_values=5)
    async with Harness(Settings(home=tmp_path), store=str(tmp_path / "h.db"), metrics=metrics) as h:
        async with MetricsServer(metrics.render, CONTENT_TYPE, port=0) as server:
            first = [await h.run(quick_agent(i), f"unique task {i}") for i in range(30)]
            before = await scrape(server.url)
            second = [await h.run(quick_agent(i), f"unique task {i}") for i in range(30, 90)]
            after = await scrape(server.url)

    assert len(after.samples) == len(before.samples)  # 60 more runs, not one more series
    runs = after.label_sets("harness_runs_finished_total")
    assert len(runs) == 6  # five agents by name, then `other`
    assert {r["agent"] for r in runs} == {*(f"agent-{i}" for i in range(5)), "other"}
    assert after.value("harness_runs_finished_total", agent="other") == 85
    assert after.total("harness_runs_finished_total") == 90  # nothing is lost, only folded
    assert len(after.label_sets("harness_model_tokens_total")) == 6 * 4
    assert after.value("harness_model_tokens_total", model="other", kind="input") == sum(
        r.usage.input_tokens for r in (*first, *second)[5:]
    )
    ids = {r.run_id for r in (*first, *second)}
    values = {v for s in after.samples for v in s.labels.values()}
    assert not values & ids
    assert not any("task" in v or v.startswith(("run_", "call_", "req_")) for v in values)


async def test_queue_depth_is_read_from_the_store_at_each_scrape(
    tmp_path: Path, store_target: str
) -> None:
    agent = Agent(name="queued", model=FunctionModel(lambda r: "never", name="queued-model"))
    settings = Settings(home=tmp_path)
    async with Harness(settings, store=store_target, execute=False) as submitter:
        run_ids = [await submitter.submit(agent, f"wait {i}") for i in range(3)]
    # another process, which never saw them submitted, watches the queue and cancels one
    async with Harness(settings, store=store_target, execute=False, metrics=True) as h:
        assert h.metrics is not None
        async with MetricsServer(h.metrics.render, CONTENT_TYPE, port=0) as server:
            assert (await scrape(server.url)).value("harness_runs_pending") == 3
            await h.cancel(run_ids[0], reason="not needed")
            page = await scrape(server.url)
    assert page.value("harness_runs_pending") == 2
    assert page.value("harness_runs_in_flight") == 0
    labels = {"agent": "queued", "task_type": "", "termination": "cancelled"}
    assert page.value("harness_runs_finished_total", **labels) == 1
    assert page.total("harness_runs_finished_total") == 1


async def test_a_run_taken_over_after_a_sigkill_is_counted_under_its_own_labels(
    tmp_path: Path, store_target: str
) -> None:
    with OwnerProcess(tmp_path, store_target, "sleeper", "answer slowly") as first:
        run_id = first.run_id
        assert run_id is not None
        async with Harness(Settings(home=tmp_path), store=store_target, execute=False) as h:
            assert (await h.get(run_id)).owner == first.owner  # it runs there, for an hour
        first.kill()

    async with Harness(
        Settings(home=tmp_path),
        store=store_target,
        agents=(sleeper(0.0),),
        lease_s=1.0,
        metrics=True,
    ) as second:
        assert second.metrics is not None
        result = await second.wait(run_id, timeout=30)
        events = await second.store.events(run_id)
        page = parse((await second.metrics.render()).decode())
    assert any(e.type == "run_recovered" for e in events)
    labels = {"agent": "sleeper", "task_type": "", "termination": "final_answer"}
    assert page.value("harness_runs_finished_total", **labels) == 1
    assert page.total("harness_runs_finished_total") == 1
    assert page.value("harness_model_tokens_total", model="function", kind="input") == (
        result.usage.input_tokens
    )
    assert page.value("harness_step_duration_seconds_count", agent="sleeper") == 1
