"""Error answers of OpenAI-compatible servers, translated into harness errors.

Pure functions over the status, headers and body text, with no SDK import: the provider
module calls them once, where the SDK's exception enters harness.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from harness.errors import (
    ContextOverflowError,
    ModelAPIError,
    ModelBadRequestError,
    ModelNotFoundError,
    ModelOverloadedError,
    ModelRateLimitError,
    ModelStreamError,
)
from harness.gateway.providers._http_errors import (
    RETRYABLE_STATUSES,
    error_class,
    is_context_overflow,
    parse_retry_after,
    retryable_status,
)
from harness.gateway.providers._values import as_dict, flat_excerpt

__all__ = ["status_error", "stream_error"]

_WAIT_IN_TEXT = re.compile(r"(?:try again|retry) in (\d+(?:\.\d+)?)\s*(ms|s)\b", re.IGNORECASE)
_BODY_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class _Detail:
    """What the provider said about its error."""

    message: str
    type: str | None = None


def status_error(
    status: int,
    headers: Mapping[str, str],
    body_text: str,
    *,
    base_url: str,
    model: str,
    request_id: str | None,
) -> ModelAPIError:
    """The harness error for an HTTP error answer; `headers` has lower-case names."""
    detail = _detail(body_text)
    overflow = status not in (401, 403, 404, 429) and is_context_overflow(detail.message)
    cls = ContextOverflowError if overflow else error_class(status)
    retryable = retryable_status(status, headers)
    retry_after = parse_retry_after(headers)
    if retry_after is None and status == 429:
        retry_after = _wait_in_text(detail.message)
    return cls(
        _explain(cls, status, detail.message, base_url=base_url, model=model),
        status=status,
        retryable=retryable and not overflow,
        retry_after=retry_after,
        provider_type=detail.type,
        body=body_text[:_BODY_LIMIT],
        request_id=request_id,
    )


def stream_error(error: object, message: str, *, request_id: str | None) -> ModelStreamError:
    """The harness error for an `error` object received inside a 200 stream."""
    fields = as_dict(error)
    code = next(
        (
            _as_status(fields.get(k))
            for k in ("status_code", "code")
            if _as_status(fields.get(k)) is not None
        ),
        None,
    )
    retryable = code in RETRYABLE_STATUSES if code is not None else True
    retryable = retryable and not is_context_overflow(message)
    kind = fields.get("type") or fields.get("code")
    return ModelStreamError(
        f"the provider reported an error in the middle of its stream: {message}",
        status=200,
        retryable=retryable,
        provider_type=None if kind is None else str(kind),
        body=json.dumps(error, default=str)[:_BODY_LIMIT],
        request_id=request_id,
    )


def _explain(cls: type[ModelAPIError], status: int, said: str, *, base_url: str, model: str) -> str:
    """What went wrong and what to do about it, for whoever must act."""
    if cls is ContextOverflowError:
        return (
            f"the request does not fit the context window of model '{model}' ({said}): "
            "shorten the conversation, or give the server a larger context "
            "(llama.cpp: --ctx-size)"
        )
    if status == 401:
        return (
            f"the server at {base_url} rejected the API key ({said}): set the key in "
            "the environment variable named by the model profile (or pass --api-key)"
        )
    if status == 403:
        return (
            f"the API key may not use model '{model}' at {base_url} ({said}): "
            "check the key's permissions or project"
        )
    if cls is ModelNotFoundError:
        return (
            f"model '{model}' not found at {base_url} ({said}): check the model name "
            f"and that the server serves it (GET {base_url}/models lists them)"
        )
    if cls is ModelBadRequestError:
        return (
            f"the server at {base_url} rejected the request ({said}): fix what it names "
            "(the messages, tools or settings it does not accept); sending it again will "
            "not help"
        )
    if cls is ModelRateLimitError:
        return f"rate limited by {base_url}: {said}; wait, or send fewer requests at once"
    if cls is ModelOverloadedError:
        return f"the server at {base_url} is overloaded: {said}; retry later"
    return f"the server at {base_url} answered HTTP {status}: {said}"


def _detail(body_text: str) -> _Detail:
    try:
        parsed: object = json.loads(body_text)
    except ValueError:
        return _Detail(flat_excerpt(body_text) or "(empty body)")
    error: object = as_dict(parsed).get("error", parsed)
    if isinstance(error, str) and error:
        return _Detail(flat_excerpt(error))
    fields = as_dict(error)
    if not fields:
        return _Detail(flat_excerpt(body_text) or "(empty body)")
    message = fields.get("message") or fields.get("detail") or flat_excerpt(body_text)
    upstream = as_dict(fields.get("metadata")).get("raw")
    if isinstance(upstream, str) and upstream:
        message = f"{message}: {upstream}"
    kind = fields.get("type") or fields.get("code")
    return _Detail(str(message), None if kind is None else str(kind))


def _wait_in_text(message: str) -> float | None:
    match = _WAIT_IN_TEXT.search(message)
    if match is None:
        return None
    amount = float(match.group(1))
    return amount / 1000 if match.group(2).lower() == "ms" else amount


def _as_status(value: object) -> int | None:
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
        return value
    return None
