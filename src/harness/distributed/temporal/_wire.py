"""The plain-JSON payloads of the workflow's activities, and their codecs.

Everything that crosses Temporal is JSON made of dicts, lists and scalars (the SDK's
default converter), encoded with harness's own codec where there is one, so a history
stays readable in the Temporal UI and replays after a harness upgrade.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, cast

from harness.agent._agent_tool import agent_tool, tool_agent
from harness.core.codec import (
    message_from_dict,
    message_to_dict,
    payload_from_dict,
    payload_to_dict,
    usage_from_dict,
    usage_to_dict,
)
from harness.core.events import EventPayload, ModelFallback, ModelRetry
from harness.core.messages import Message, ToolDefinition
from harness.core.usage import Prices
from harness.gateway.model import (
    FinishReason,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ResponseFormat,
)
from harness.store.protocol import NewEvent, RunUpdate, StepWrite
from harness.tools.builtin.messages import send_message_tool, wait_for_message_tool
from harness.tools.spec import SideEffects, ToolSpec

from ._inbox import inbox_tool

__all__ = [
    "Batch",
    "batch_step",
    "notice_from_dict",
    "request_from_dict",
    "request_to_dict",
    "response_from_dict",
    "response_to_dict",
    "tool_from_dict",
    "tool_to_dict",
    "update_to_dict",
]

Batch = dict[str, Any]
"""One keyed write of a run: `key`, `first_seq` (the seq the workflow gave its first event;
`None`: not checked), `events` (type, ts, payload), `messages`, `audit`, `blobs`, `update`
(the run row's changes) and, optionally, `expect` (the states the run must be in, else the
batch is dropped: the run ended meanwhile)."""


def request_to_dict(request: ModelRequest) -> dict[str, Any]:
    """A model request without its observer (notices come back with the response)."""
    return {
        "messages": [message_to_dict(m) for m in request.messages],
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in request.tools
        ],
        "settings": _settings_to_dict(request.settings),
        "request_id": request.request_id,
    }


def request_from_dict(data: Mapping[str, Any]) -> ModelRequest:
    """The request `request_to_dict` wrote."""
    return ModelRequest(
        messages=tuple(message_from_dict(m) for m in data["messages"]),
        tools=tuple(
            ToolDefinition(name=t["name"], description=t["description"], parameters=t["parameters"])
            for t in data["tools"]
        ),
        settings=_settings_from_dict(data["settings"]),
        request_id=data.get("request_id"),
    )


def _settings_to_dict(settings: ModelSettings) -> dict[str, Any]:
    out = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
    out["stop"] = list(settings.stop)
    form = settings.response_format
    if form is not None:
        out["response_format"] = {
            "name": form.name,
            "schema": dict(form.schema),
            "strict": form.strict,
        }
    return out


def _settings_from_dict(data: Mapping[str, Any]) -> ModelSettings:
    values = dict(data)
    values["stop"] = tuple(values.get("stop") or ())
    form = values.get("response_format")
    if form is not None:
        values["response_format"] = ResponseFormat(
            name=form["name"], schema=form["schema"], strict=bool(form["strict"])
        )
    return ModelSettings(**values)


def response_to_dict(
    response: ModelResponse, notices: Sequence[ModelRetry | ModelFallback]
) -> dict[str, Any]:
    """A model response, with the gateway's notices of its retries and fallbacks."""
    prices = response.prices
    return {
        "message": message_to_dict(response.message),
        "finish_reason": response.finish_reason,
        "usage": usage_to_dict(response.usage),
        "model": response.model,
        "refusal": response.refusal,
        "request_id": response.request_id,
        "raw_finish_reason": response.raw_finish_reason,
        "tool_calls_from_text": response.tool_calls_from_text,
        "profile": response.profile,
        "prices": None if prices is None else dataclasses.asdict(prices),
        "notices": [{"type": n.type, "payload": payload_to_dict(n)} for n in notices],
    }


def response_from_dict(data: Mapping[str, Any]) -> ModelResponse:
    """The response `response_to_dict` wrote (its notices: `notice_from_dict`)."""
    prices = data.get("prices")
    return ModelResponse(
        message=message_from_dict(data["message"]),
        finish_reason=cast(FinishReason, data["finish_reason"]),
        usage=usage_from_dict(data["usage"]),
        model=data.get("model"),
        refusal=data.get("refusal"),
        request_id=data.get("request_id"),
        raw_finish_reason=data.get("raw_finish_reason"),
        tool_calls_from_text=data.get("tool_calls_from_text"),
        profile=data.get("profile"),
        prices=None if prices is None else Prices(**prices),
    )


def notice_from_dict(data: Mapping[str, Any]) -> ModelRetry | ModelFallback:
    """One notice of `response_to_dict`'s list."""
    return cast(ModelRetry | ModelFallback, payload_from_dict(data["type"], data["payload"]))


def tool_to_dict(spec: ToolSpec) -> dict[str, Any]:
    """What the workflow needs of a tool: all of it but its function.

    An agent tool also names its agent (`agent`): the workflow runs its calls itself, each
    as a child workflow.
    """
    agent = tool_agent(spec)
    out: dict[str, Any] = {
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.parameters,
        "side_effects": spec.side_effects,
        "timeout": spec.timeout,
        "grace_s": spec.grace_s,
        "approval": spec.approval,
        "max_result_chars": spec.max_result_chars,
        "tags": list(spec.tags),
    }
    if agent is not None:
        out["agent"] = agent if isinstance(agent, str) else agent.name
    elif spec.function in _message_functions():
        out["inbox"] = True  # send_message, wait_for_message: the workflow's inbox
    return out


def _message_functions() -> tuple[Any, ...]:
    return (send_message_tool().function, wait_for_message_tool().function)


def runs_in_workflow(spec: ToolSpec) -> bool:
    """Whether a tool of `tool_from_dict` runs in the workflow (agent and message tools)."""
    return spec.function is not _runs_on_the_worker


def tool_from_dict(data: Mapping[str, Any]) -> ToolSpec:
    """A tool described by `tool_to_dict`, whose function never runs (the worker's does).

    An agent tool's does run, in the workflow: it asks the run's `ToolContext.children`.
    """
    agent = data.get("agent")
    function = _runs_on_the_worker
    coerce, context_param = None, None
    if agent is not None:
        made = agent_tool(str(agent), name=data["name"])
        function, coerce, context_param = made.function, made.coerce, made.context_param
    elif data.get("inbox"):
        made = inbox_tool(data["name"])
        function, coerce, context_param = made.function, made.coerce, made.context_param
    return ToolSpec(
        name=data["name"],
        description=data["description"],
        parameters=data["parameters"],
        function=function,
        coerce=coerce,
        context_param=context_param,
        side_effects=cast(SideEffects, data["side_effects"]),
        timeout=data.get("timeout"),
        grace_s=float(data.get("grace_s") or 0.0),
        approval=data.get("approval", "auto"),
        max_result_chars=data.get("max_result_chars"),
        tags=tuple(data.get("tags") or ()),
    )


def _runs_on_the_worker(**_: Any) -> str:  # pragma: no cover - never called
    raise RuntimeError("a workflow's tool runs in the harness.tool_call activity")


def event_to_dict(payload: EventPayload, ts: float) -> dict[str, Any]:
    """One event of a batch."""
    return {"type": payload.type, "ts": ts, "payload": payload_to_dict(payload)}


def message_dict(message: Message) -> dict[str, Any]:
    """One message of a batch."""
    return message_to_dict(message)


def update_to_dict(update: RunUpdate) -> dict[str, Any]:
    """The run row's changes of a batch (the fields the workflow sets)."""
    out: dict[str, Any] = {}
    for name in ("state", "result", "termination", "error", "agent", "model"):
        value = getattr(update, name)
        if value is not None:
            out[name] = value
    if update.usage is not None:
        out["usage"] = usage_to_dict(update.usage)
    if update.children_usage is not None:
        out["children_usage"] = usage_to_dict(update.children_usage)
    if update.metadata is not None:
        out["metadata"] = dict(update.metadata)
    if update.result_data is not None:
        out["result_data"] = dict(update.result_data)
    return out


def _update_from_dict(data: Mapping[str, Any]) -> RunUpdate:
    usage, children = data.get("usage"), data.get("children_usage")
    return RunUpdate(
        state=data.get("state"),
        usage=None if usage is None else usage_from_dict(usage),
        children_usage=None if children is None else usage_from_dict(children),
        agent=data.get("agent"),
        model=data.get("model"),
        metadata=data.get("metadata"),
        result=data.get("result"),
        termination=data.get("termination"),
        error=data.get("error"),
        result_data=data.get("result_data"),
    )


def batch_step(run_id: str, batch: Mapping[str, Any]) -> StepWrite:
    """The store's step for one batch, keyed so that a retried write writes nothing twice."""
    update = batch.get("update")
    return StepWrite(
        run_id=run_id,
        events=tuple(
            NewEvent(payload=payload_from_dict(e["type"], e["payload"]), ts=float(e["ts"]))
            for e in batch.get("events") or ()
        ),
        messages=tuple(message_from_dict(m) for m in batch.get("messages") or ()),
        audit=tuple(batch.get("audit") or ()),
        blobs=dict(batch.get("blobs") or {}),
        update=None if not update else _update_from_dict(update),
        key=str(batch["key"]),
        expect_states=batch.get("expect"),
        delivered=tuple(batch.get("delivered") or ()),
    )
