"""Resilience end to end: profiles in the settings, a real HTTP server that fails on purpose,
and the durable runtime. Runs complete or fail as they should, the server sees the right
number of attempts, and the stored events say what happened — on SQLite and PostgreSQL."""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness import Agent, Harness
from harness.core import RunEvent, RunResult
from harness.core.events import ModelCalled, ModelFallback, ModelRetry, RunFailed, payloads
from harness.gateway import ModelProfile
from harness.runtime import Settings, load_settings
from harness.testing import FakeOpenAIServer, FakeReply, faults


def profile(server: FakeOpenAIServer, name: str = "flaky", **changes: Any) -> ModelProfile:
    return ModelProfile(name=name, model="fake-model", base_url=server.base_url, **changes)


async def run(
    tmp_path: Path, store: str, profiles: Sequence[ModelProfile], model: str = "flaky"
) -> tuple[RunResult, list[RunEvent]]:
    settings = Settings(home=tmp_path, profiles={p.name: p for p in profiles})
    async with Harness(settings, store=store) as h:
        result = await h.run(Agent(name="resilient", model=model), "say ok", timeout=60)
        events = await h.store.events(result.run_id)
    return result, events


async def test_a_429_with_retry_after_is_waited_for_and_the_run_completes(
    tmp_path: Path, store_target: str
) -> None:
    script = [faults.rate_limited(retry_after=0), FakeReply.text("ok after the limit")]
    with FakeOpenAIServer(script) as server:
        result, events = await run(tmp_path, store_target, [profile(server, max_retries=2)])
        ids = [r.headers.get("x-request-id") for r in server.requests]
    assert result.output == "ok after the limit"
    assert result.termination == "final_answer"
    assert len(server.requests) == 2
    (called,) = payloads(events, ModelCalled)
    assert ids == [called.request_id] * 2  # the retry is the same request, by its header
    (retry,) = payloads(events, ModelRetry)
    assert retry.request_id == called.request_id
    assert (retry.status, retry.attempt) == (429, 1)
    assert (retry.delay_s, retry.retry_after_s) == (0.0, 0.0)
    assert retry.step == 1
    assert result.usage.requests == 1  # only the answer that came back is counted


async def test_a_burst_of_500s_then_success_with_the_profile_in_harness_toml(
    tmp_path: Path,
    store_target: str,
) -> None:
    script = faults.fail_then(
        faults.status(500, retry_after_ms=10), times=2, then=FakeReply.text("ok")
    )
    with FakeOpenAIServer(script) as server:
        (tmp_path / "harness.toml").write_text(
            f'[models.flaky]\nmodel = "fake-model"\nbase_url = "{server.base_url}"\n'
            "max_retries = 3\n"
        )
        async with Harness(load_settings(tmp_path), store=store_target) as h:
            result = await h.run(Agent(name="resilient", model="flaky"), "say ok", timeout=60)
            events = await h.store.events(result.run_id)
    assert result.output == "ok"
    assert len(server.requests) == 3
    retries = payloads(events, ModelRetry)
    assert [(r.status, r.attempt, r.delay_s) for r in retries] == [
        (500, 1, 0.01),
        (500, 2, 0.01),
    ]
    assert all(r.max_attempts == 4 for r in retries)


async def test_retries_that_run_out_fail_the_run_with_the_servers_error(
    tmp_path: Path, store_target: str
) -> None:
    script = faults.fail_then(faults.status(503, retry_after=0), times=3)
    with FakeOpenAIServer(script) as server:
        result, events = await run(tmp_path, store_target, [profile(server, max_retries=2)])
    assert result.termination == "error"
    assert not result.ok
    assert "503" in (result.error or "")
    assert len(server.requests) == 3
    assert [r.attempt for r in payloads(events, ModelRetry)] == [1, 2]
    (failed,) = payloads(events, RunFailed)
    assert failed.termination == "error"


async def test_a_401_fails_at_once_without_a_retry(tmp_path: Path, store_target: str) -> None:
    script = [faults.status(401, "Incorrect API key provided", type="invalid_request_error")]
    with FakeOpenAIServer(script) as server:
        result, events = await run(tmp_path, store_target, [profile(server, max_retries=3)])
    assert result.termination == "error"
    assert "Incorrect API key provided" in (result.error or "")
    assert len(server.requests) == 1
    assert payloads(events, ModelRetry) == []
    assert payloads(events, RunFailed)[0].error_type == "ModelAuthenticationError"


async def test_a_failing_profile_falls_back_to_the_next(tmp_path: Path, store_target: str) -> None:
    with (
        FakeOpenAIServer(faults.fail_then(faults.status(500), times=5)) as down,
        FakeOpenAIServer([FakeReply.text("from the spare")]) as spare,
    ):
        profiles = [
            profile(down, max_retries=0, fallbacks=("spare",)),
            profile(spare, name="spare", max_retries=0),
        ]
        result, events = await run(tmp_path, store_target, profiles)
    assert result.output == "from the spare"
    assert (len(down.requests), len(spare.requests)) == (1, 1)
    (moved,) = payloads(events, ModelFallback)
    assert (moved.reason, moved.status) == ("error", 500)
    assert "spare" in moved.to_model
