"""What the model wrappers share: request ids, notices to the observer, closing streams."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from harness.core.ids import new_id
from harness.errors import ModelAPIError, ModelError
from harness.gateway.model import GatewayNotice, ModelRequest, StreamEvent

_MESSAGE_LIMIT = 300


def with_request_id(request: ModelRequest) -> ModelRequest:
    """`request` with a request id, so that every attempt and fallback sends the same one."""
    if request.request_id is not None:
        return request
    return dataclasses.replace(request, request_id=new_id("req"))


def notify(request: ModelRequest, notice: GatewayNotice) -> None:
    """Tell the request's observer, if it has one."""
    if request.observer is not None:
        request.observer(notice)


def error_fields(error: ModelError | None) -> dict[str, Any]:
    """The `status`, `error` and `message` fields of a notice about `error`."""
    if error is None:
        return {"status": None, "error": None, "message": None}
    message = str(error)
    if len(message) > _MESSAGE_LIMIT:
        message = message[:_MESSAGE_LIMIT] + "…"
    status = error.status if isinstance(error, ModelAPIError) else None
    return {"status": status, "error": type(error).__name__, "message": message}


@asynccontextmanager
async def closing(stream: AsyncIterator[StreamEvent]) -> AsyncGenerator[AsyncIterator[StreamEvent]]:
    """Use `stream`, then close it even when the caller stopped early or it failed."""
    try:
        yield stream
    finally:
        if isinstance(stream, AsyncGenerator):
            await stream.aclose()
