"""What the API answers, as JSON-ready dicts: runs, messages, approvals, spans."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any, cast

from harness.core.codec import dumps, loads, usage_to_dict
from harness.core.messages import Message
from harness.core.usage import Limits
from harness.observability import TracedSpan, span_to_dict
from harness.runtime._agents_config import LIMIT_KEYS
from harness.server.problems import Problem
from harness.store.protocol import RunRecord

__all__ = [
    "decode_cursor",
    "encode_cursor",
    "message_json",
    "run_json",
    "span_json",
    "trace_json",
]


def run_json(record: RunRecord, steps: int, limits: Limits | None = None) -> dict[str, Any]:
    """A run as the API shows it (docs/server.md, "Run").

    Args:
        record: The run.
        steps: Steps started so far.
        limits: The limits it executes under (`Harness.limits_of`); when unknown, only
            `max_steps` is read from the run's metadata, and the other limits are null.
    """
    budget = _limits_json(record.metadata, limits)
    return {
        "run_id": record.run_id,
        "state": record.state.value,
        "agent": record.agent,
        "task": record.task,
        "task_type": record.task_type,
        "experiment": record.experiment,
        "variant": record.variant,
        "model": record.model,
        "priority": record.priority,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "started_at": record.started_at,
        "finished_at": record.finished_at,
        "step": steps,
        "usage": usage_to_dict(record.usage),
        "result": record.result,
        "termination": record.termination,
        "error": record.error,
        "detail": (record.result_data or {}).get("detail"),
        "max_steps": budget["max_steps"],
        "limits": budget,
        "resumed_from": record.resumed_from,
        "parent_run_id": record.parent_run_id,
        "root_run_id": record.root,
        "depth": record.depth,
        "children_usage": usage_to_dict(record.children_usage),
        "last_seq": record.last_seq,
        "owner": record.owner,
    }


def _limits_json(metadata: Mapping[str, Any], limits: Limits | None) -> dict[str, Any]:
    if limits is None:
        return dict.fromkeys(LIMIT_KEYS) | {"max_steps": _max_steps(metadata)}
    return {key: getattr(limits, key) for key in LIMIT_KEYS}


def _max_steps(metadata: Mapping[str, Any]) -> int | None:
    """The run's step budget: its explicit override, else its agent's limit."""
    for where in (metadata.get("overrides"), metadata.get("agent")):
        limits: Any = (
            cast(Mapping[str, Any], where).get("limits") if isinstance(where, Mapping) else None
        )
        value: Any = (
            cast(Mapping[str, Any], limits).get("max_steps")
            if isinstance(limits, Mapping)
            else None
        )
        if isinstance(value, int):
            return value
    return None


def message_json(message: Message) -> dict[str, Any]:
    """A message as the API shows it: the text and calls, not the token bookkeeping."""
    return {
        "role": message.role,
        "content": message.content,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ],
        "tool_call_id": message.tool_call_id,
        "name": message.name,
        "reasoning": message.reasoning,
        "tokens": message.tokens,
    }


def span_json(traced: TracedSpan, parents: Mapping[str, str]) -> dict[str, Any]:
    """A span as `harness trace --json` gives it, with `parent_id`: its parent's OTel id."""
    span = traced.span
    parent = parents.get(span.parent_id) if span.parent_id else None
    return span_to_dict(traced) | {"parent_id": parent}


def trace_json(spans: Sequence[TracedSpan]) -> dict[str, Any]:
    """`{"spans": [...]}` of a run's trace, parents before children."""
    parents = {t.span.span_id: t.otel_span_id for t in spans}
    return {"spans": [span_json(t, parents) for t in spans]}


def encode_cursor(record: RunRecord) -> str:
    """The opaque cursor of the page that follows `record` (the last of a page)."""
    text = dumps({"c": record.created_at, "r": record.run_id})
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    """`(created_at, run_id)` from a cursor of `encode_cursor`.

    Raises:
        Problem: 422, the cursor was not made by this API.
    """
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = loads(base64.urlsafe_b64decode(padded.encode()).decode())
        created, run_id = data["c"], data["r"]
    except (ValueError, KeyError, binascii.Error, UnicodeError, TypeError) as exc:
        raise Problem(422, "cursor: not a cursor this API gave out") from exc
    if not isinstance(created, int | float) or not isinstance(run_id, str):
        raise Problem(422, "cursor: not a cursor this API gave out")
    return float(created), run_id
