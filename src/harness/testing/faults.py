"""Replies that fail the way real model servers fail, for `FakeOpenAIServer` scripts.

Each function returns a `FakeReply` (or a list of them) to put in a script, so retries,
fallbacks and error messages can be tested over real HTTP without a flaky network::

    from harness.testing import FakeOpenAIServer, FakeReply, faults

    script = faults.fail_then(faults.status(503), times=2, then=FakeReply.text("ok"))
    with FakeOpenAIServer(script) as server:
        ...  # a retrying client sees two 503s, then the answer
        assert len(server.requests) == 3

The failures: an error status with or without `Retry-After` (`status`, `rate_limited`,
`overloaded`), a connection reset in the middle of a stream (`reset_mid_stream`), an answer
slower than the client's timeout (`slow_first_byte`), a body that is not valid JSON
(`malformed_json`), and an error event inside a stream that began with 200 (`error_event`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from harness.testing.fake_openai import FakeReply

__all__ = [
    "error_event",
    "fail_then",
    "malformed_json",
    "overloaded",
    "rate_limited",
    "reset_mid_stream",
    "slow_first_byte",
    "status",
]

_SSE = {"content-type": "text/event-stream"}
_JSON = {"content-type": "application/json"}


def status(
    code: int,
    message: str | None = None,
    *,
    retry_after: float | str | None = None,
    retry_after_ms: float | None = None,
    type: str = "server_error",
) -> FakeReply:
    """An OpenAI-style JSON error answer with HTTP status `code`.

    Args:
        code: The HTTP status, e.g. 500, 503 or 401.
        message: The error message; defaults to one naming the status.
        retry_after: Sent as the `Retry-After` header: seconds, or an HTTP date string.
        retry_after_ms: Sent as the `retry-after-ms` header (OpenAI's own, in milliseconds).
        type: The error `type` in the body.
    """
    headers: dict[str, str] = {}
    if retry_after is not None:
        headers["retry-after"] = _number(retry_after)
    if retry_after_ms is not None:
        headers["retry-after-ms"] = _number(retry_after_ms)
    return FakeReply.error(
        code, message or f"fault injected: HTTP {code}", type=type, headers=headers
    )


def rate_limited(retry_after: float | str | None = None) -> FakeReply:
    """HTTP 429, with a `Retry-After` header when `retry_after` is given."""
    return status(
        429,
        "Rate limit reached for requests: fault injected",
        retry_after=retry_after,
        type="rate_limit_exceeded",
    )


def overloaded(retry_after: float | str | None = None) -> FakeReply:
    """HTTP 529, the status Anthropic-style gateways send when they are overloaded."""
    return status(529, "Overloaded", retry_after=retry_after, type="overloaded_error")


def reset_mid_stream(
    text_before: str = "Hel", text_after: str = "lo, world", *, model: str = "fake-model"
) -> FakeReply:
    """A 200 stream that delivers `text_before` as a delta, then resets the connection.

    With `text_before=""` the reset comes right after the response headers, before any
    delta. Meant for streaming requests; a plain request sees a reset before its body ends.
    """
    sent = [_sse(_chunk(model, {"role": "assistant", "content": ""}))]
    if text_before:
        sent.append(_sse(_chunk(model, {"content": text_before})))
    lost = _sse(_chunk(model, {"content": text_after}, finish="stop"))
    head = b"".join(sent)
    return FakeReply.raw(200, _SSE, [head, lost, b"data: [DONE]\n\n"], reset_after=len(head))


def slow_first_byte(delay_s: float, then: FakeReply | None = None) -> FakeReply:
    """`then` (by default a short text answer), sent only after `delay_s` seconds.

    Give the client a timeout shorter than `delay_s` to see it time out.
    """
    return dataclasses.replace(then or FakeReply.text("too late"), delay_s=delay_s)


def malformed_json() -> FakeReply:
    """HTTP 200 with `content-type: application/json` and a body cut in the middle."""
    return FakeReply.raw(200, _JSON, b'{"id": "chatcmpl-fault", "choices": [{"message": ')


def error_event(
    message: str = "upstream overloaded",
    *,
    code: int | str | None = 503,
    text_before: str = "",
    model: str = "fake-model",
) -> FakeReply:
    """A stream that starts with 200, then sends an `error` event instead of an answer.

    Args:
        message: The error's message.
        code: The error's `code` (a status such as 503 makes it retryable, 400 not).
        text_before: Text delivered as a delta before the error event; empty for none.
        model: The model name in the chunks.
    """
    error: dict[str, Any] = {"message": message, "type": "server_error"}
    if code is not None:
        error["code"] = code
    events = [_sse(_chunk(model, {"role": "assistant", "content": ""}))]
    if text_before:
        events.append(_sse(_chunk(model, {"content": text_before})))
    events.append(b"event: error\ndata: " + json.dumps({"error": error}).encode() + b"\n\n")
    return FakeReply.raw(200, _SSE, events)


def fail_then(
    fault: FakeReply | Sequence[FakeReply], times: int = 1, then: FakeReply | None = None
) -> list[FakeReply]:
    """A script: `fault` `times` times (a sequence is repeated whole), then `then`.

    `then` defaults to the text answer `ok`.
    """
    faults = [fault] if isinstance(fault, FakeReply) else list(fault)
    return faults * times + [then or FakeReply.text("ok")]


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fault",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _sse(chunk: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def _number(value: float | str) -> str:
    return value if isinstance(value, str) else f"{value:g}"
