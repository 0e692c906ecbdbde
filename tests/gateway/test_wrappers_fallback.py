"""FallbackModel over two fake servers, each behind a RetryingModel and an OpenAIModel."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from harness.core.codec import payload_to_dict
from harness.core.messages import Message, ToolCall, ToolDefinition
from harness.errors import (
    ConfigError,
    ModelAPIError,
    ModelConnectionError,
    ModelRateLimitError,
    ModelServerError,
)
from harness.gateway import FallbackModel, RetryingModel
from harness.gateway.model import (
    GatewayNotice,
    Model,
    ModelRequest,
    ModelSettings,
    StreamEvent,
    TextDelta,
)
from harness.gateway.providers.openai import OpenAIModel
from harness.gateway.scripted import FunctionModel
from harness.gateway.wrappers import estimate_request_tokens
from harness.memory import TokenCounter
from harness.testing import FakeOpenAIServer, FakeReply, faults

from .conftest import final_response


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

    def of(self, notice: str) -> list[dict[str, Any]]:
        return [payload for kind, payload in self.seen if kind == notice]


@pytest.fixture
def primary() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(model="primary-model") as fake:
        yield fake


@pytest.fixture
def secondary() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(model="secondary-model") as fake:
        yield fake


@pytest.fixture
async def clients(
    primary: FakeOpenAIServer, secondary: FakeOpenAIServer
) -> AsyncIterator[tuple[OpenAIModel, OpenAIModel]]:
    async with (
        OpenAIModel("primary-model", base_url=primary.base_url, label="primary") as first,
        OpenAIModel("secondary-model", base_url=secondary.base_url, label="secondary") as second,
    ):
        yield first, second


def chain(
    clients: tuple[OpenAIModel, OpenAIModel],
    sleeps: Sleeps | None = None,
    *,
    context_windows: list[int | None] | None = None,
) -> FallbackModel:
    """`FallbackModel` over both servers, each retried up to 3 times."""
    retried = [
        RetryingModel(client, sleep=sleeps or Sleeps(), random=lambda: 0.5) for client in clients
    ]
    return FallbackModel(retried, context_windows=context_windows)


def ask(text: str = "hello", **fields: Any) -> ModelRequest:
    return ModelRequest(messages=(Message.user(text),), **fields)


async def stream_all(
    model: Model, request: ModelRequest, into: list[StreamEvent] | None = None
) -> list[StreamEvent]:
    events = [] if into is None else into
    async for event in model.stream(request):
        events.append(event)
    return events


async def answer(model: Model, request: ModelRequest, streaming: bool) -> str:
    if streaming:
        response = final_response(await stream_all(model, request))
    else:
        response = await model.request(request)
    return response.message.content or ""


# --- moving on -----------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["request", "stream"])
async def test_spent_retries_move_to_the_next_model(
    primary: FakeOpenAIServer,
    secondary: FakeOpenAIServer,
    clients: tuple[OpenAIModel, OpenAIModel],
    streaming: bool,
) -> None:
    primary.add(*[faults.status(503)] * 4)
    secondary.add(FakeReply.text("from secondary"))
    notices = Notices()
    request = ask(request_id="req_fb", observer=notices)
    assert await answer(chain(clients), request, streaming) == "from secondary"
    assert (len(primary.requests), len(secondary.requests)) == (4, 1)
    sent = {r.headers["x-request-id"] for r in primary.requests + secondary.requests}
    assert sent == {"req_fb"}
    assert [kind for kind, _ in notices.seen] == ["model_retry"] * 3 + ["model_fallback"]
    assert notices.of("model_fallback") == [
        {
            "request_id": "req_fb",
            "from_model": "primary",
            "to_model": "secondary",
            "reason": "error",
            "status": 503,
            "error": "ModelServerError",
            "message": notices.of("model_fallback")[0]["message"],
            "delay_s": 0.0,
        }
    ]


@pytest.mark.parametrize(
    "fault",
    [
        faults.reset_mid_stream(text_before=""),
        faults.slow_first_byte(30),
        faults.malformed_json(),
        faults.overloaded(),
    ],
    ids=["reset", "timeout", "malformed-json", "529"],
)
async def test_every_retryable_fault_falls_back_when_retries_run_out(
    primary: FakeOpenAIServer, secondary: FakeOpenAIServer, fault: FakeReply
) -> None:
    primary.add(*[fault] * 2)
    secondary.add(FakeReply.text("ok"))
    async with (
        OpenAIModel("p", base_url=primary.base_url, timeout_s=0.2) as first,
        OpenAIModel("s", base_url=secondary.base_url) as second,
    ):
        retried = [RetryingModel(m, max_retries=1, sleep=Sleeps()) for m in (first, second)]
        events = await stream_all(FallbackModel(retried), ask())
    assert final_response(events).message.content == "ok"
    assert (len(primary.requests), len(secondary.requests)) == (2, 1)


async def test_a_long_retry_after_falls_back_at_once(
    primary: FakeOpenAIServer, secondary: FakeOpenAIServer, clients: tuple[OpenAIModel, OpenAIModel]
) -> None:
    primary.add(faults.rate_limited(retry_after=3600))
    secondary.add(FakeReply.text("ok"))
    sleeps, notices = Sleeps(), Notices()
    response = await chain(clients, sleeps).request(ask(observer=notices))
    assert response.message.content == "ok"
    assert (len(primary.requests), len(secondary.requests)) == (1, 1)
    assert sleeps.delays == []
    assert notices.of("model_fallback")[0]["status"] == 429


@pytest.mark.parametrize("streaming", [False, True], ids=["request", "stream"])
async def test_context_overflow_moves_on_without_retrying(
    primary: FakeOpenAIServer,
    secondary: FakeOpenAIServer,
    clients: tuple[OpenAIModel, OpenAIModel],
    streaming: bool,
) -> None:
    said = "This model's maximum context length is 8192 tokens."
    primary.add(faults.status(400, said, type="invalid_request_error"))
    secondary.add(FakeReply.text("bigger window"))
    notices = Notices()
    assert await answer(chain(clients), ask(observer=notices), streaming) == "bigger window"
    assert (len(primary.requests), len(secondary.requests)) == (1, 1)
    (moved,) = notices.of("model_fallback")
    assert (moved["reason"], moved["status"], moved["error"]) == (
        "context_overflow",
        400,
        "ContextOverflowError",
    )
    assert notices.of("model_retry") == []


@pytest.mark.parametrize("streaming", [False, True], ids=["request", "stream"])
async def test_a_request_too_long_for_a_known_window_skips_that_model(
    primary: FakeOpenAIServer,
    secondary: FakeOpenAIServer,
    clients: tuple[OpenAIModel, OpenAIModel],
    streaming: bool,
) -> None:
    secondary.add(FakeReply.text("fits"))
    notices = Notices()
    request = ask("x" * 400, observer=notices)
    model = chain(clients, context_windows=[50, None])
    assert await answer(model, request, streaming) == "fits"
    assert (len(primary.requests), len(secondary.requests)) == (0, 1)
    (moved,) = notices.of("model_fallback")
    assert moved == {
        "request_id": secondary.requests[0].headers["x-request-id"],
        "from_model": "primary",
        "to_model": "secondary",
        "reason": "context_window",
        "status": None,
        "error": None,
        "message": None,
        "delay_s": 0.0,
        "estimated_tokens": estimate_request_tokens(request),
        "context_window": 50,
    }


async def test_a_request_within_the_window_stays(
    primary: FakeOpenAIServer, clients: tuple[OpenAIModel, OpenAIModel]
) -> None:
    primary.add(FakeReply.text("fits"))
    response = await chain(clients, context_windows=[10_000, 50]).request(ask("x" * 400))
    assert response.message.content == "fits"
    assert len(primary.requests) == 1


async def test_the_last_model_is_tried_even_when_the_estimate_is_too_long(
    primary: FakeOpenAIServer, secondary: FakeOpenAIServer, clients: tuple[OpenAIModel, OpenAIModel]
) -> None:
    secondary.add(FakeReply.text("the estimate was rough"))
    response = await chain(clients, context_windows=[50, 50]).request(ask("x" * 400))
    assert response.message.content == "the estimate was rough"
    assert (len(primary.requests), len(secondary.requests)) == (0, 1)


# --- staying -------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
@pytest.mark.parametrize("streaming", [False, True], ids=["request", "stream"])
async def test_fail_fast_statuses_never_fall_back(
    primary: FakeOpenAIServer,
    secondary: FakeOpenAIServer,
    clients: tuple[OpenAIModel, OpenAIModel],
    status: int,
    streaming: bool,
) -> None:
    primary.add(faults.status(status, "no"))
    secondary.add(FakeReply.text("never asked"))
    notices = Notices()
    with pytest.raises(ModelAPIError) as caught:
        await answer(chain(clients), ask(observer=notices), streaming)
    assert caught.value.status == status
    assert (len(primary.requests), len(secondary.requests)) == (1, 0)
    assert notices.seen == []


async def test_a_stream_that_yielded_does_not_fall_back(
    primary: FakeOpenAIServer, secondary: FakeOpenAIServer, clients: tuple[OpenAIModel, OpenAIModel]
) -> None:
    primary.add(faults.reset_mid_stream(text_before="Hel"))
    secondary.add(FakeReply.text("never asked"))
    events: list[StreamEvent] = []
    with pytest.raises(ModelConnectionError):
        await stream_all(chain(clients), ask(), into=events)
    assert events == [TextDelta(text="Hel")]
    assert (len(primary.requests), len(secondary.requests)) == (1, 0)


async def test_when_every_model_fails_the_last_error_is_raised(
    primary: FakeOpenAIServer, secondary: FakeOpenAIServer, clients: tuple[OpenAIModel, OpenAIModel]
) -> None:
    primary.add(*[faults.status(503)] * 4)
    secondary.add(*[faults.rate_limited()] * 4)
    with pytest.raises(ModelRateLimitError) as caught:
        await chain(clients).request(ask())
    assert secondary.base_url in str(caught.value)
    assert caught.value.__notes__ == ["secondary: gave up after 4 attempt(s)"]
    assert (len(primary.requests), len(secondary.requests)) == (4, 4)


async def test_first_model_answering_is_enough(
    primary: FakeOpenAIServer, secondary: FakeOpenAIServer, clients: tuple[OpenAIModel, OpenAIModel]
) -> None:
    primary.add(FakeReply.text("first"))
    notices = Notices()
    events = await stream_all(chain(clients), ask(observer=notices))
    assert final_response(events).message.content == "first"
    assert (len(primary.requests), len(secondary.requests)) == (1, 0)
    assert notices.seen == []


async def test_three_models_move_one_step_at_a_time() -> None:
    def down(request: ModelRequest) -> str:
        raise ModelServerError("down", status=500, retryable=True)

    models = [FunctionModel(down, name="a"), FunctionModel(down, name="b")]
    models.append(FunctionModel(lambda request: "c answers", name="c"))
    notices = Notices()
    model = FallbackModel(models)
    response = await model.request(ask(observer=notices))
    assert response.message.content == "c answers"
    moves = [(p["from_model"], p["to_model"]) for p in notices.of("model_fallback")]
    assert moves == [("a", "b"), ("b", "c")]
    assert model.name == "fallback:a,b,c"


# --- construction and estimates --------------------------------------------------------------


def test_needs_models_and_one_window_each() -> None:
    with pytest.raises(ConfigError, match="at least one model"):
        FallbackModel([])
    one = FunctionModel(lambda request: "x")
    with pytest.raises(ConfigError, match="1 models but 2 context windows"):
        FallbackModel([one], context_windows=[100, 200])


def test_the_estimate_is_the_context_managers_uncalibrated_one_plus_the_answer_budget() -> None:
    tool = ToolDefinition(name="search", description="d" * 40, parameters={"type": "object"})
    call = ToolCall(id="c1", name="search", arguments='{"q": "' + "a" * 80 + '"}')
    messages = (Message.user("Find the thing. " * 30), Message.assistant(None, [call]))
    request = ModelRequest(messages=messages, tools=(tool,))
    assert estimate_request_tokens(request) == TokenCounter().estimate(messages, (tool,))
    budget = ModelRequest(
        messages=messages, tools=(tool,), settings=ModelSettings(max_output_tokens=1000)
    )
    assert estimate_request_tokens(budget) == estimate_request_tokens(request) + 1000


async def test_cjk_text_is_sized_at_its_density_and_goes_to_the_larger_model() -> None:
    small = FunctionModel(lambda request: "small", name="small")
    large = FunctionModel(lambda request: "large", name="large")
    request = ask("汉字" * 500)  # 1000 characters, about a token each (not one per four)
    model = FallbackModel([small, large], context_windows=[600, None])
    assert (await model.request(request)).message.content == "large"


@pytest.mark.parametrize(("margin", "answered_by"), [(0, "small"), (-1, "large")])
async def test_window_boundary(margin: int, answered_by: str) -> None:
    small = FunctionModel(lambda request: "small", name="small")
    large = FunctionModel(lambda request: "large", name="large")
    request = ask("x" * 4000)
    window = estimate_request_tokens(request) + margin
    model = FallbackModel([small, large], context_windows=[window, None])
    assert (await model.request(request)).message.content == answered_by
