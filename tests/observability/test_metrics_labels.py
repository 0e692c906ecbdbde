"""Where a run's labels come from: its submission, its start, or its row (a run claimed here).

The events are decoded from their stored form by the codec, exactly as the store hands them
to the bus; the subscriber is fed directly and its page parsed.
"""

from typing import Any

from harness.core.codec import event_from_dict
from harness.observability.metrics import MetricsSubscriber

from .scrape import Page, parse

USAGE = {
    "input_tokens": 1000, "output_tokens": 200, "cached_tokens": 600, "reasoning_tokens": 50,
    "requests": 1, "tool_calls": 0, "cost_usd": 0.125,
}  # fmt: skip
CHAIN = "fallback:primary (m1),spare (m2)"


def event(run_id: str, seq: int, ts: float, kind: str, **payload: Any) -> Any:
    data = {"v": 1, "run_id": run_id, "seq": seq, "ts": ts, "type": kind, "payload": payload}
    return event_from_dict(data)


def a_refund_run(run_id: str) -> list[Any]:
    """Submitted with task type `refund`, answered by the first member of a fallback chain."""
    return [
        event(run_id, 1, 100.0, "run_submitted", agent="billing", task="refund order 42",
              parent_run_id=None, task_type="refund"),
        event(run_id, 2, 100.5, "run_started", agent="billing", model=CHAIN, strategy="react",
              tools=[], max_steps=5),
        event(run_id, 3, 101.0, "step_started", step=1),
        event(run_id, 4, 101.0, "model_called", step=1, model=CHAIN, messages=2, tools=0,
              stream=False, request_id="req_1"),
        event(run_id, 5, 103.0, "model_responded", step=1, finish_reason="stop", content="ok",
              usage=USAGE, tool_calls=[], duration_s=2.0),
        event(run_id, 6, 103.5, "run_finished", output="ok", termination="final_answer",
              complete=True, usage=USAGE),
    ]  # fmt: skip


async def page_of(metrics: MetricsSubscriber) -> Page:
    return parse((await metrics.render()).decode())


async def test_task_type_and_the_answering_model_label_every_line() -> None:
    metrics = MetricsSubscriber()
    for e in a_refund_run("run_a"):
        metrics(e)
    page = await page_of(metrics)
    done = {"agent": "billing", "task_type": "refund", "termination": "final_answer"}
    assert page.value("harness_runs_finished_total", **done) == 1
    tokens = {"model": "primary (m1)", "task_type": "refund"}
    assert page.value("harness_model_tokens_total", **tokens, kind="input") == 1000
    assert page.value("harness_model_tokens_total", **tokens, kind="cached") == 600
    assert page.value("harness_model_cost_usd_total", **tokens) == 0.125
    assert page.value("harness_model_call_duration_seconds_sum", model="primary (m1)") == 2.0
    step = {"agent": "billing", "task_type": "refund"}
    assert page.value("harness_step_duration_seconds_sum", **step) == 2.5  # to the run's end
    assert page.value("harness_context_tokens_bucket", model="primary (m1)", le="1024.0") == 1
    assert page.value("harness_context_tokens_bucket", model="primary (m1)", le="512.0") == 0


async def test_a_fallback_moves_the_tokens_to_the_model_that_answered() -> None:
    metrics = MetricsSubscriber()
    events = a_refund_run("run_b")
    moved = event("run_b", 4, 102.0, "model_fallback", request_id="req_1",
                  from_model="primary (m1)", to_model="spare (m2)", reason="error", status=500,
                  error="ModelAPIError", message="down", delay_s=0.0, step=1)  # fmt: skip
    for e in [*events[:4], moved, *events[4:]]:
        metrics(e)
    page = await page_of(metrics)
    assert page.value("harness_model_tokens_total", model="spare (m2)", kind="output") == 200
    assert page.value("harness_model_tokens_total", model="primary (m1)", kind="output") == 0
    fallback = {"from_model": "primary (m1)", "to_model": "spare (m2)", "reason": "error"}
    assert page.value("harness_model_fallbacks_total", **fallback) == 1


async def test_a_run_claimed_here_is_labelled_from_its_row() -> None:
    metrics = MetricsSubscriber()
    metrics.note_run("run_c", agent="triage", task_type="support", model="local")
    metrics(event("run_c", 7, 50.0, "run_recovered", previous_owner="h:1", state="RUNNING",
                  owner="h:2"))  # fmt: skip
    metrics(event("run_c", 8, 51.0, "run_failed", error="boom", error_type="RuntimeError",
                  termination="error"))  # fmt: skip
    metrics(event("run_d", 3, 52.0, "run_cancelled", by="user:x", reason=None))
    page = await page_of(metrics)
    failed = {"agent": "triage", "task_type": "support", "termination": "error"}
    assert page.value("harness_runs_finished_total", **failed) == 1
    unknown = {"agent": "unknown", "task_type": "", "termination": "cancelled"}
    assert page.value("harness_runs_finished_total", **unknown) == 1


async def test_a_paused_run_closes_its_step_and_ending_forgets_the_run() -> None:
    metrics = MetricsSubscriber(max_runs=2)
    events = a_refund_run("run_e")
    paused = event("run_e", 4, 104.0, "run_paused", at="step boundary")
    for e in [*events[:3], paused]:
        metrics(e)
    page = await page_of(metrics)
    assert page.value("harness_step_duration_seconds_sum", agent="billing") == 3.0
    assert page.value("harness_step_duration_seconds_count", agent="billing") == 1
    # many runs that never end here (taken over elsewhere) are forgotten, oldest first
    for i in range(100):
        metrics(event(f"run_{i}", 1, 1.0, "run_submitted", agent=f"a{i}", task="t",
                      parent_run_id=None))  # fmt: skip
    assert len(metrics._runs) == 2


async def test_a_step_taken_at_once_counts_what_its_events_count_one_by_one() -> None:
    single, batched = MetricsSubscriber(), MetricsSubscriber()
    events = a_refund_run("run_a")
    for e in events:
        single(e)
    for batch in (events[:1], events[1:2], events[2:5], events[5:]):
        batched.batch(batch)

    def counted(text: bytes) -> list[str]:
        return [line for line in text.decode().splitlines() if "_created" not in line]

    assert counted(await batched.render()) == counted(await single.render())
    page = await page_of(batched)
    done = {"agent": "billing", "task_type": "refund", "termination": "final_answer"}
    assert page.value("harness_runs_finished_total", **done) == 1
