"""RetryingModel over real HTTP: every fault of `harness.testing.faults`, through OpenAIModel.

Delays go to an injected sleep that records them and returns at once, so no test waits for
a backoff and none asserts on time.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from harness.core.codec import payload_to_dict
from harness.errors import (
    ConfigError,
    ModelAPIError,
    ModelAuthenticationError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    ModelOverloadedError,
    ModelRateLimitError,
    ModelResponseError,
    ModelServerError,
    ModelStreamError,
    ModelTimeoutError,
)
from harness.gateway import RetryingModel
from harness.gateway.model import GatewayNotice, Model, ModelRequest, StreamEvent, TextDelta
from harness.gateway.providers.openai import OpenAIModel
from harness.gateway.scripted import FunctionModel
from harness.testing import FakeOpenAIServer, FakeReply, faults

from .conftest import PROVIDERS, a_request, final_response, served_reply


def recorded(name: str) -> FakeReply:
    """The recorded response of corpus exchange `name`, replayed byte for byte."""
    return served_reply(json.loads((PROVIDERS / f"{name}.json").read_text()))


TIMEOUT_S = 1.0
"""The client's timeout in the slow-answer cases; the fault waits far longer.

It bounds every answer of these tests, so it leaves room for a loaded machine: at 0.2 s a
prompt answer sometimes timed out while the suite's other process was busy, and the test
counted one attempt too many.
"""


class Sleeps:
    """An injected sleep: records each delay and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


class Notices:
    """An observer that keeps every notice as its event payload, checking that it is JSON.

    The step is left out: the wrappers leave it 0, for the agent loop to fill in.
    """

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, notice: GatewayNotice) -> None:
        payload = payload_to_dict(notice)
        json.dumps(payload)
        assert payload.pop("step") == 0
        self.seen.append((notice.type, payload))


@pytest.fixture
async def openai(server: FakeOpenAIServer) -> AsyncIterator[OpenAIModel]:
    async with OpenAIModel("test-model", base_url=server.base_url, timeout_s=TIMEOUT_S) as model:
        yield model


async def stream_all(
    model: Model, request: ModelRequest, into: list[StreamEvent] | None = None
) -> list[StreamEvent]:
    """Every event of `model.stream(request)`, appended to `into` as it arrives."""
    events = [] if into is None else into
    async for event in model.stream(request):
        events.append(event)
    return events


def retrying(inner: Any, sleeps: Sleeps, **options: Any) -> RetryingModel:
    return RetryingModel(inner, sleep=sleeps, random=lambda: 0.5, **options)


async def outcome(model: RetryingModel, request: ModelRequest, streaming: bool) -> str:
    """The answer's text, from a stream or a plain request."""
    if streaming:
        response = final_response(await stream_all(model, request))
    else:
        response = await model.request(request)
    return response.message.content or ""


# --- faults that pass: each ends in an answer after the right number of attempts ---------

PASSING: dict[str, tuple[list[FakeReply], int]] = {
    "429-no-retry-after": (faults.fail_then(faults.rate_limited(), times=2), 3),
    "429-retry-after": (faults.fail_then(faults.rate_limited(retry_after=7)), 2),
    "burst-500-503": (
        [faults.status(500), faults.status(503), faults.status(500), FakeReply.text("ok")],
        4,
    ),
    "529": (faults.fail_then(faults.overloaded(), times=2), 3),
    "408": (faults.fail_then(faults.status(408)), 2),
    "409": (faults.fail_then(faults.status(409)), 2),
    "425": (faults.fail_then(faults.status(425)), 2),
    "502": (faults.fail_then(faults.status(502)), 2),
    "504": (faults.fail_then(faults.status(504)), 2),
    "slow-first-byte": (faults.fail_then(faults.slow_first_byte(30)), 2),
    "malformed-json": (faults.fail_then(faults.malformed_json()), 2),
    # llama-server answers this on every path until its model is loaded (no Retry-After)
    "llamacpp-503-loading-model": (
        faults.fail_then(recorded("llamacpp-error-503-loading-model-documented"), times=2),
        3,
    ),
}


@pytest.mark.parametrize("streaming", [False, True], ids=["request", "stream"])
@pytest.mark.parametrize(("script", "attempts"), PASSING.values(), ids=PASSING.keys())
async def test_faults_that_pass(
    server: FakeOpenAIServer,
    openai: OpenAIModel,
    script: list[FakeReply],
    attempts: int,
    streaming: bool,
) -> None:
    server.add(*script)
    sleeps = Sleeps()
    answer = await outcome(retrying(openai, sleeps), a_request(), streaming)
    assert answer == "ok"
    assert len(server.requests) == attempts
    assert len(sleeps.delays) == attempts - 1


STREAM_ONLY_PASSING: dict[str, FakeReply] = {
    "reset-before-first-delta": faults.reset_mid_stream(text_before=""),
    "error-event-before-first-delta": faults.error_event("upstream overloaded", code=503),
    "error-event-without-code": faults.error_event("something broke", code=None),
}


@pytest.mark.parametrize("fault", STREAM_ONLY_PASSING.values(), ids=STREAM_ONLY_PASSING.keys())
async def test_stream_is_retried_before_its_first_delta(
    server: FakeOpenAIServer, openai: OpenAIModel, fault: FakeReply
) -> None:
    server.add(*faults.fail_then(fault, times=2, then=FakeReply.text("Hello")))
    sleeps = Sleeps()
    events = await stream_all(retrying(openai, sleeps), a_request())
    assert final_response(events).message.content == "Hello"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello"
    assert len(server.requests) == 3


async def test_reset_of_a_plain_request_is_retried(
    server: FakeOpenAIServer, openai: OpenAIModel
) -> None:
    cut = FakeReply(content="never whole", reset_after=10)
    server.add(*faults.fail_then(cut))
    assert await outcome(retrying(openai, Sleeps()), a_request(), streaming=False) == "ok"
    assert len(server.requests) == 2


# --- faults that fail: the right error after the right number of attempts ----------------


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (faults.status(503), ModelServerError),
        (faults.rate_limited(), ModelRateLimitError),
        (faults.overloaded(), ModelOverloadedError),
        (faults.slow_first_byte(30), ModelTimeoutError),
        (faults.malformed_json(), ModelResponseError),
    ],
    ids=["503", "429", "529", "timeout", "malformed-json"],
)
async def test_retries_run_out(
    server: FakeOpenAIServer, openai: OpenAIModel, fault: FakeReply, error: type[ModelError]
) -> None:
    server.add(*[fault] * 5)
    sleeps = Sleeps()
    with pytest.raises(error) as caught:
        await retrying(openai, sleeps, max_retries=2).request(a_request())
    assert type(caught.value) is error
    assert len(server.requests) == 3
    assert len(sleeps.delays) == 2
    assert caught.value.__notes__ == ["openai:test-model: gave up after 3 attempt(s)"]


@pytest.mark.parametrize(
    ("status", "error", "what_to_fix"),
    [
        (400, ModelBadRequestError, "fix what it names"),
        (401, ModelAuthenticationError, "set the key in the environment variable"),
        (403, ModelAuthenticationError, "check the key's permissions"),
        (404, ModelNotFoundError, "check the model name"),
        (422, ModelBadRequestError, "fix what it names"),
    ],
)
@pytest.mark.parametrize("streaming", [False, True], ids=["request", "stream"])
async def test_fail_fast_statuses_make_one_attempt(
    server: FakeOpenAIServer,
    openai: OpenAIModel,
    status: int,
    error: type[ModelAPIError],
    what_to_fix: str,
    streaming: bool,
) -> None:
    server.add(*faults.fail_then(faults.status(status, "the server's own words")))
    sleeps, notices = Sleeps(), Notices()
    request = ModelRequest(messages=a_request().messages, observer=notices)
    with pytest.raises(error) as caught:
        await outcome(retrying(openai, sleeps), request, streaming)
    assert len(server.requests) == 1
    assert sleeps.delays == []
    assert notices.seen == []
    assert caught.value.status == status
    assert what_to_fix in str(caught.value)
    assert "the server's own words" in str(caught.value)


async def test_stream_is_not_retried_after_a_delta(
    server: FakeOpenAIServer, openai: OpenAIModel
) -> None:
    server.add(*faults.fail_then(faults.reset_mid_stream(text_before="Hel")))
    events: list[StreamEvent] = []
    with pytest.raises(ModelConnectionError):
        await stream_all(retrying(openai, Sleeps()), a_request(), into=events)
    assert events == [TextDelta(text="Hel")]
    assert len(server.requests) == 1


async def test_error_event_after_a_delta_is_not_retried(
    server: FakeOpenAIServer, openai: OpenAIModel
) -> None:
    server.add(*faults.fail_then(faults.error_event("upstream overloaded", text_before="Hel")))
    events: list[StreamEvent] = []
    with pytest.raises(ModelStreamError) as caught:
        await stream_all(retrying(openai, Sleeps()), a_request(), into=events)
    assert caught.value.retryable
    assert events == [TextDelta(text="Hel")]
    assert len(server.requests) == 1


async def test_error_event_that_is_not_retryable(
    server: FakeOpenAIServer, openai: OpenAIModel
) -> None:
    server.add(*faults.fail_then(faults.error_event("bad tool call", code=400)))
    with pytest.raises(ModelStreamError) as caught:
        await stream_all(retrying(openai, Sleeps()), a_request())
    assert not caught.value.retryable
    assert len(server.requests) == 1


async def test_foreign_exceptions_are_not_retried() -> None:
    def broken(request: ModelRequest) -> str:
        raise KeyError("a bug, not a failure of the model")

    inner = FunctionModel(broken)
    with pytest.raises(KeyError):
        await retrying(inner, Sleeps()).request(a_request())
    assert len(inner.requests) == 1


# --- delays ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "delay"),
    [
        (faults.rate_limited(retry_after=7), 7.0),
        (faults.rate_limited(retry_after="0"), 0.0),
        (faults.status(429, retry_after_ms=1500), 1.5),
        (faults.status(503, retry_after=2), 2.0),
        (faults.overloaded(retry_after=12.5), 12.5),
    ],
    ids=["429-seconds", "429-zero", "429-ms", "503", "529"],
)
async def test_retry_after_is_honoured(
    server: FakeOpenAIServer, openai: OpenAIModel, fault: FakeReply, delay: float
) -> None:
    server.add(*faults.fail_then(fault))
    sleeps = Sleeps()
    await retrying(openai, sleeps, max_delay_s=1.0).request(a_request())
    assert sleeps.delays == [delay]


async def test_too_long_a_retry_after_is_not_waited_for(
    server: FakeOpenAIServer, openai: OpenAIModel
) -> None:
    server.add(*faults.fail_then(faults.rate_limited(retry_after=3600)))
    sleeps = Sleeps()
    with pytest.raises(ModelRateLimitError) as caught:
        await retrying(openai, sleeps, max_retry_after_s=60).request(a_request())
    assert sleeps.delays == []
    assert len(server.requests) == 1
    assert "asked to wait 3600 s, more than max_retry_after_s=60" in caught.value.__notes__[0]


async def test_backoff_doubles_up_to_the_cap(server: FakeOpenAIServer, openai: OpenAIModel) -> None:
    server.add(*faults.fail_then(faults.status(503), times=5))
    sleeps = Sleeps()
    model = RetryingModel(
        openai, max_retries=5, base_delay_s=0.5, max_delay_s=3.0, sleep=sleeps, random=lambda: 0.5
    )
    await model.request(a_request())
    assert sleeps.delays == [0.25, 0.5, 1.0, 1.5, 1.5]


def _always_503(request: ModelRequest) -> str:
    raise ModelServerError("down", status=503, retryable=True)


async def test_full_jitter_stays_within_its_bounds() -> None:
    sleeps = Sleeps()
    rng = random.Random(5)
    model = RetryingModel(
        FunctionModel(_always_503),
        max_retries=400,
        base_delay_s=0.01,
        max_delay_s=0.08,
        sleep=sleeps,
        random=rng.random,
    )
    with pytest.raises(ModelServerError):
        await model.request(a_request())
    ceilings = [min(0.08, 0.01 * 2**n) for n in range(400)]
    assert len(sleeps.delays) == 400
    assert all(0 <= d <= c for d, c in zip(sleeps.delays, ceilings, strict=True))
    capped = [d / 0.08 for d, c in zip(sleeps.delays, ceilings, strict=True) if c == 0.08]
    # Full jitter: uniform over [0, cap], so both halves of the range are used.
    assert min(capped) < 0.1
    assert max(capped) > 0.9
    assert 0.4 < sum(capped) / len(capped) < 0.6


@pytest.mark.parametrize("draw", [0.0, 0.999999])
async def test_jitter_bounds_are_inclusive_of_zero_and_below_the_ceiling(draw: float) -> None:
    sleeps = Sleeps()
    model = RetryingModel(
        FunctionModel(_always_503), max_retries=3, base_delay_s=1, sleep=sleeps, random=lambda: draw
    )
    with pytest.raises(ModelServerError):
        await model.request(a_request())
    assert sleeps.delays == [pytest.approx(draw * c) for c in (1, 2, 4)]


# --- request id and notices --------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["request", "stream"])
async def test_request_id_is_the_same_on_every_attempt(
    server: FakeOpenAIServer, openai: OpenAIModel, streaming: bool
) -> None:
    for given in ("req_given", None):
        server.requests.clear()
        server.add(*faults.fail_then(faults.status(503), times=2))
        notices = Notices()
        request = ModelRequest(messages=a_request().messages, request_id=given, observer=notices)
        await outcome(retrying(openai, Sleeps()), request, streaming)
        sent = {r.headers["x-request-id"] for r in server.requests}
        assert len(server.requests) == 3
        assert len(sent) == 1
        request_id = sent.pop()
        assert request_id == given if given else request_id.startswith("req_")
        assert [payload["request_id"] for _, payload in notices.seen] == [request_id] * 2


async def test_each_retry_is_a_notice(server: FakeOpenAIServer, openai: OpenAIModel) -> None:
    server.add(faults.rate_limited(retry_after=7), faults.slow_first_byte(30), FakeReply.text("ok"))
    notices = Notices()
    request = ModelRequest(messages=a_request().messages, request_id="req_n", observer=notices)
    await retrying(openai, Sleeps()).request(request)
    assert [notice for notice, _ in notices.seen] == ["model_retry", "model_retry"]
    first, second = (payload for _, payload in notices.seen)
    assert first == {
        "request_id": "req_n",
        "model": "openai:test-model",
        "attempt": 1,
        "max_attempts": 4,
        "status": 429,
        "error": "ModelRateLimitError",
        "message": first["message"],
        "delay_s": 7.0,
        "retry_after_s": 7.0,
    }
    assert "Rate limit reached" in first["message"]
    assert (second["attempt"], second["status"], second["error"]) == (2, None, "ModelTimeoutError")
    assert (second["delay_s"], second["retry_after_s"]) == (0.5, None)


async def test_without_an_observer_nothing_is_told(
    server: FakeOpenAIServer, openai: OpenAIModel
) -> None:
    server.add(*faults.fail_then(faults.status(500)))
    response = await retrying(openai, Sleeps()).request(a_request())
    assert response.message.content == "ok"


# --- construction ------------------------------------------------------------------------


def test_name_and_inner() -> None:
    inner = FunctionModel(lambda request: "x", name="inner")
    model = RetryingModel(inner)
    assert (model.name, model.inner) == ("inner", inner)


@pytest.mark.parametrize(
    "options",
    [{"max_retries": -1}, {"base_delay_s": -0.1}, {"max_delay_s": -1}, {"max_retry_after_s": -1}],
)
def test_negative_settings_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="must be 0 or more"):
        RetryingModel(FunctionModel(lambda request: "x"), **options)


async def test_zero_retries_is_one_attempt(server: FakeOpenAIServer, openai: OpenAIModel) -> None:
    server.add(*faults.fail_then(faults.status(503)))
    sleeps = Sleeps()
    with pytest.raises(ModelServerError):
        await retrying(openai, sleeps, max_retries=0).request(a_request())
    assert len(server.requests) == 1
    assert sleeps.delays == []
