"""Error answers of the Anthropic Messages API, translated into harness errors.

Pure functions over the status, headers and body, with no SDK import: the provider module
calls them once, where the SDK's exception enters harness. Anthropic's error bodies are
`{"type": "error", "error": {"type": …, "message": …}, "request_id": …}`; its own request id
is quoted in the message, for a support ticket.
"""

from __future__ import annotations

import json
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
    error_class,
    is_context_overflow,
    parse_retry_after,
    retryable_status,
)
from harness.gateway.providers._values import as_dict, flat_excerpt

__all__ = ["status_error", "stream_error"]

RETRYABLE_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})
"""Error types that a later attempt may not meet, for errors inside a stream."""

_BODY_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class _Detail:
    """What Anthropic said about its error."""

    message: str
    type: str | None = None
    request_id: str | None = None


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
    detail = _detail(body_text, headers.get("request-id"))
    overflow = status in (400, 413) and is_context_overflow(detail.message)
    cls = ContextOverflowError if overflow else _error_class(status)
    retryable = retryable_status(status, headers)
    return cls(
        _explain(cls, status, _said(detail), base_url=base_url, model=model),
        status=status,
        retryable=retryable and not overflow,
        retry_after=parse_retry_after(headers),
        provider_type=detail.type,
        body=body_text[:_BODY_LIMIT],
        request_id=request_id,
    )


def stream_error(body: object, *, request_id: str | None) -> ModelStreamError:
    """The harness error for an `event: error` inside a stream that began with 200."""
    text = body if isinstance(body, str) else json.dumps(body, default=str)
    detail = _detail(text, None)
    retryable = detail.type in RETRYABLE_TYPES and not is_context_overflow(detail.message)
    hint = "; retry later" if detail.type == "overloaded_error" else ""
    return ModelStreamError(
        f"Anthropic reported an error in the middle of its stream: {_said(detail)}{hint}",
        status=200,
        retryable=retryable,
        provider_type=detail.type,
        body=text[:_BODY_LIMIT],
        request_id=request_id,
    )


def _error_class(status: int) -> type[ModelAPIError]:
    # Anthropic answers 413 (request_too_large) to a body over its size limit: fix the request.
    return ModelBadRequestError if status == 413 else error_class(status)


def _explain(cls: type[ModelAPIError], status: int, said: str, *, base_url: str, model: str) -> str:
    """What went wrong and what to do about it, for whoever must act."""
    if cls is ContextOverflowError:
        return (
            f"the request does not fit the context window of model '{model}' ({said}): "
            "shorten the conversation, or lower max_output_tokens"
        )
    if status == 401:
        return (
            f"{base_url} rejected the API key ({said}): set ANTHROPIC_API_KEY, or the "
            "environment variable named by the model profile's api_key_env"
        )
    if status == 403:
        return (
            f"the API key may not use model '{model}' at {base_url} ({said}): check the "
            "key's workspace and permissions in the Anthropic console"
        )
    if status == 402:
        return f"{base_url} refused the request for billing ({said}): check the account's credit"
    if cls is ModelNotFoundError:
        return (
            f"model '{model}' not found at {base_url} ({said}): check the model name, "
            f"e.g. claude-sonnet-4-5 (GET {base_url}/v1/models lists the models of the key)"
        )
    if cls is ModelBadRequestError:
        return f"{base_url} rejected the request: {said}"
    if cls is ModelRateLimitError:
        return f"rate limited by {base_url}: {said}; wait, or send fewer requests or tokens"
    if cls is ModelOverloadedError:
        return f"{base_url} is overloaded: {said}; retry later"
    return f"{base_url} answered HTTP {status}: {said}"


def _said(detail: _Detail) -> str:
    """The provider's words, with its request id when it sent one."""
    if detail.request_id:
        return f"{detail.message} [request id {detail.request_id}]"
    return detail.message


def _detail(body_text: str, header_request_id: str | None) -> _Detail:
    try:
        parsed: object = json.loads(body_text)
    except ValueError:
        return _Detail(flat_excerpt(body_text) or "(empty body)", None, header_request_id)
    fields = as_dict(parsed)
    error: object = fields.get("error", parsed)
    request_id = fields.get("request_id") or header_request_id
    request_id = request_id if isinstance(request_id, str) else None
    if isinstance(error, str) and error:
        return _Detail(flat_excerpt(error), None, request_id)
    details = as_dict(error)
    message = details.get("message")
    if not isinstance(message, str) or not message:
        message = flat_excerpt(body_text) or "(empty body)"
    kind = details.get("type")
    return _Detail(message, kind if isinstance(kind, str) else None, request_id)
