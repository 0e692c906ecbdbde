"""`FunctionModel` keeps the requests it answers, unless told not to (benchmarks share one)."""

from __future__ import annotations

import gc
import weakref

from harness.core.messages import Message
from harness.gateway.model import ModelRequest
from harness.gateway.scripted import FunctionModel


class _Run:
    """Stands for the run a request's observer belongs to."""

    def observe(self, *_: object) -> None:
        return None


def _request(run: _Run, text: str) -> ModelRequest:
    return ModelRequest(messages=(Message.user(text),), observer=run.observe)  # type: ignore[arg-type]


async def test_requests_are_kept_by_default() -> None:
    model = FunctionModel(lambda request: f"echo {request.messages[-1].content}")
    first = await model.request(_request(_Run(), "a"))
    await model.request(_request(_Run(), "b"))
    assert first.message.content == "echo a"
    assert [r.messages[-1].content for r in model.requests] == ["a", "b"]


async def test_without_keep_requests_a_shared_model_lets_each_run_go() -> None:
    model = FunctionModel(lambda request: "ok", keep_requests=False)
    run = _Run()
    gone = weakref.ref(run)
    response = await model.request(_request(run, "a"))
    assert response.message.content == "ok"
    assert model.requests == []
    del run
    gc.collect()
    assert gone() is None, "the model still holds the run through its request's observer"


async def test_with_keep_requests_the_model_holds_each_run() -> None:
    model = FunctionModel(lambda request: "ok")
    run = _Run()
    gone = weakref.ref(run)
    await model.request(_request(run, "a"))
    del run
    gc.collect()
    assert gone() is not None
