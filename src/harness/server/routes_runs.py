"""`/api/runs…` and `/api/approvals`: list, submit, read, follow and steer runs."""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field

from harness.agent.spec import AgentSpec
from harness.core.ids import check_task_type
from harness.core.states import RunState
from harness.errors import ConfigError
from harness.observability import trace_of
from harness.runtime._agents_config import Overrides
from harness.runtime.harness import Harness, already_decided, stored_context
from harness.server._http import APIRouter, Depends, Header, Query, Request, StreamingResponse
from harness.server.auth import Principal, harness_of, require
from harness.server.problems import Problem
from harness.server.sse import SSE_HEADERS, run_stream
from harness.server.views import (
    decode_cursor,
    encode_cursor,
    message_json,
    run_json,
    trace_json,
)
from harness.store.protocol import RunRecord
from harness.tools.context import MAX_MESSAGE_CHARS

__all__ = ["router"]

router = APIRouter(prefix="/api")
Reader = Annotated[Principal, Depends(require("read"))]
Operator = Annotated[Principal, Depends(require("operate"))]


class NewRunBody(BaseModel):
    """`POST /api/runs`: the options of `harness run`."""

    model_config = ConfigDict(extra="forbid")
    task: str = Field(min_length=1, max_length=100_000, description="What the agent should do.")
    agent: str | None = Field(default=None, description="An agent of harness.toml by name.")
    model: str | None = Field(default=None, description="A profile name or openai:MODEL.")
    tools: list[str] | None = Field(
        default=None,
        max_length=64,
        description="An ad-hoc agent's tools, as `harness run --tools`: built-in and "
        "[tools.NAME] tools by name, tag:TAG, a glob, SERVER.TOOL (none by default).",
    )
    task_type: str | None = Field(default=None, description="A label for this kind of task.")
    priority: int = Field(default=0, ge=-1_000_000, le=1_000_000)
    max_steps: int | None = Field(default=None, ge=1, le=100_000)


class CancelBody(BaseModel):
    """`POST /api/runs/{run_id}/cancel`."""

    model_config = ConfigDict(extra="forbid")
    reason: str | None = Field(default=None, max_length=2_000)


class MessageBody(BaseModel):
    """`POST /api/runs/{run_id}/messages`: what `harness send` sends."""

    model_config = ConfigDict(extra="forbid")
    content: str = Field(
        min_length=1, max_length=MAX_MESSAGE_CHARS, description="The message (not only spaces)."
    )
    sender: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Who sends it, as the run is told; the token's name when left out.",
    )


class DecisionBody(BaseModel):
    """`POST /api/runs/{run_id}/approvals/{call_id}`."""

    model_config = ConfigDict(extra="forbid")
    decision: str = Field(pattern="^(approve|deny)$")
    reason: str | None = Field(default=None, max_length=2_000)


async def _run(harness: Harness, run_id: str) -> RunRecord:
    record = await harness.store.get_run(run_id)
    if record is None:
        raise Problem(404, f"no run {run_id} in the store")
    return record


async def _with_steps(harness: Harness, records: list[RunRecord]) -> list[dict[str, Any]]:
    """The runs as JSON, with the steps each took (counted by the store, in one query)."""
    steps = await harness.store.count_events([r.run_id for r in records], types=("step_started",))
    return [run_json(r, steps.get(r.run_id, 0), harness.limits_of(r)) for r in records]


def _states(state: str | None) -> list[str] | None:
    if not state:
        return None
    names = [s.strip().upper() for s in state.split(",") if s.strip()]
    unknown = [n for n in names if n not in RunState.__members__]
    if unknown:
        known = ", ".join(RunState.__members__)
        raise Problem(422, f"state: no run state {unknown[0]!r}; use one of {known}")
    return names


@router.get("/runs", summary="List runs, newest first")
async def list_runs(
    request: Request,
    _: Reader,
    state: Annotated[str | None, Query(description="States, comma-separated.")] = None,
    agent: str | None = None,
    task_type: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: str | None = None,
) -> dict[str, Any]:
    """Runs matching every filter, newest first, `limit` per page; `next_cursor` goes on."""
    harness = harness_of(request)
    try:
        check_task_type(task_type)
    except ConfigError as exc:
        raise Problem(422, f"task_type: {exc}") from exc
    records = await harness.store.list_runs(
        state=_states(state),
        agent=agent,
        task_type=task_type,
        limit=limit + 1,
        before=decode_cursor(cursor) if cursor else None,
    )
    page = records[:limit]
    following = encode_cursor(page[-1]) if len(records) > limit else None
    return {"runs": await _with_steps(harness, page), "next_cursor": following}


@router.post("/runs", status_code=201, summary="Submit a run")
async def submit_run(request: Request, body: NewRunBody, principal: Operator) -> dict[str, str]:
    """Queue a run (the options of `harness run`); this server or any worker executes it."""
    harness = harness_of(request)
    agent = _agent_of(harness, body)
    limits = {"max_steps": body.max_steps} if body.max_steps is not None else {}
    overrides = Overrides(model=body.model, strategy=None, limits=limits)
    _check_model(harness, body.model)
    run_id = await harness.submit(
        agent,
        body.task,
        priority=body.priority,
        task_type=body.task_type,
        overrides=overrides if body.model or limits else None,
    )
    request.state.note = f"submitted {run_id} as {principal.name}"
    return {"run_id": run_id}


def _agent_of(harness: Harness, body: NewRunBody) -> AgentSpec | str | None:
    """The agent a body names, or an ad-hoc one with the tools it lists.

    Raises:
        Problem: 422, an unknown agent, tool or task type, or tools given with an agent.
    """
    from harness.runtime._settings_agents import pick_tools

    settings = harness.settings
    try:
        check_task_type(body.task_type)
    except ConfigError as exc:
        raise Problem(422, f"task_type: {exc}") from exc
    if body.agent is not None:
        if body.tools is not None:
            raise Problem(422, f"tools: agent {body.agent!r} brings its own tools")
        return body.agent  # an unknown name is a ConfigError of `submit`: 422
    kind = settings.task_types.get(body.task_type or "")
    if kind is not None and kind.agent is not None and body.tools is None:
        return None  # the task type's agent
    try:
        tools = pick_tools(body.tools or [], settings.tools, settings.mcp_servers, "tools")
    except ConfigError as exc:
        raise Problem(422, str(exc)) from exc
    return AgentSpec(
        name="api",
        model=settings.default_model,
        tools=tools,
        limits=settings.default_limits,
        approvals=settings.approvals,
        strategy=settings.default_strategy,
    )


def _check_model(harness: Harness, model: str | None) -> None:
    from harness.gateway.profiles import resolve_profile

    if model is None:
        return
    try:
        resolve_profile(model, harness.settings.profiles)
    except ConfigError as exc:
        raise Problem(422, f"model: {exc}") from exc


@router.get("/runs/{run_id}", summary="One run")
async def get_run(request: Request, run_id: str, _: Reader) -> dict[str, Any]:
    """The run as the store knows it: state, usage, result, steps taken."""
    harness = harness_of(request)
    return (await _with_steps(harness, [await _run(harness, run_id)]))[0]


@router.get("/runs/{run_id}/messages", summary="A run's message history")
async def get_messages(request: Request, run_id: str, _: Reader) -> dict[str, Any]:
    """The run's exact message history, rebuilt from the store."""
    harness = harness_of(request)
    await _run(harness, run_id)
    return {"messages": [message_json(m) for m in await harness.store.messages(run_id)]}


@router.get("/runs/{run_id}/audit", summary="A run's audit records")
async def get_audit(request: Request, run_id: str, _: Reader) -> dict[str, Any]:
    """One audit record per tool call of the run."""
    harness = harness_of(request)
    await _run(harness, run_id)
    return {"audit": await harness.store.audit(run_id)}


@router.get("/runs/{run_id}/trace", summary="A run's trace")
async def get_trace(request: Request, run_id: str, _: Reader) -> dict[str, Any]:
    """The run's spans (what `harness trace RUN` draws), parents before children."""
    harness = harness_of(request)
    record = await _run(harness, run_id)
    events = await harness.store.events(run_id)
    providers = {name: p.provider for name, p in harness.settings.profiles.items()}
    return trace_json(trace_of(run_id, events, stored_context(record), providers=providers))


_MAX_SEQ: Final = 2**53
"""The largest seq a client may resume after (`?after=` and `Last-Event-ID` alike)."""


def _after(request: Request, after: int | None) -> int:
    """Where a stream resumes: `Last-Event-ID`, else `?after=`, else the start."""
    header = request.headers.get("last-event-id")
    if header is not None and header.strip():
        text = header.strip().rpartition(":")[2]
        if not (text.isascii() and text.isdigit()) or int(text) > _MAX_SEQ:
            raise Problem(422, f"Last-Event-ID: {header!r} is not an event id of this stream")
        return int(text)
    return after or 0


@router.get(
    "/runs/{run_id}/events",
    summary="A run's events as Server-Sent Events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def run_events(
    request: Request,
    run_id: str,
    principal: Reader,
    after: Annotated[int | None, Query(ge=0, le=_MAX_SEQ)] = None,
) -> StreamingResponse:
    """Stored events after `after` (or `Last-Event-ID`), then live ones; ends after the last."""
    harness = harness_of(request)
    await _run(harness, run_id)
    state = request.app.state
    stream = run_stream(
        harness,
        run_id,
        _after(request, after),
        streams=state.streams,
        keepalive_s=state.config.keepalive_s,
    )
    admitted = state.streams.admit(principal.name, stream)
    return StreamingResponse(admitted, media_type="text/event-stream", headers=SSE_HEADERS)


@router.post("/runs/{run_id}/messages", status_code=201, summary="Send a message to a run")
async def send_message(
    request: Request,
    run_id: str,
    body: MessageBody,
    principal: Operator,
    idempotency_key: Annotated[
        str | None,
        Header(
            min_length=1,
            max_length=200,
            description="Sent again with the same key, the message is kept once.",
        ),
    ] = None,
) -> dict[str, Any]:
    """Put a message in the run's inbox; it reads it at its next step (as `harness send`).

    The run sees a `user` message `[message from SENDER]: …`. With an `Idempotency-Key`, a
    retried request returns the first one's `message_id` and keeps nothing more.
    """
    harness = harness_of(request)
    await _run(harness, run_id)
    sender = body.sender if body.sender is not None else principal.name
    key = None if idempotency_key is None else f"http:{principal.name}:{run_id}:{idempotency_key}"
    message_id = await harness.send(run_id, body.content, sender=sender, key=key)
    return {"run_id": run_id, "message_id": message_id}


@router.post("/runs/{run_id}/pause", status_code=202, summary="Pause a run")
async def pause_run(request: Request, run_id: str, principal: Operator) -> dict[str, str]:
    """Pause the run at its next step boundary."""
    harness = harness_of(request)
    await _run(harness, run_id)
    await harness.pause(run_id, by=f"token:{principal.name}")
    return {"run_id": run_id, "requested": "pause"}


@router.post("/runs/{run_id}/resume", summary="Resume a run")
async def resume_run(request: Request, run_id: str, _: Operator) -> dict[str, str]:
    """Continue a PAUSED run, or start a new one from a FAILED or CANCELLED one."""
    harness = harness_of(request)
    await _run(harness, run_id)
    return {"run_id": await harness.resume(run_id), "resumed": run_id}


@router.post("/runs/{run_id}/cancel", status_code=202, summary="Cancel a run")
async def cancel_run(
    request: Request, run_id: str, principal: Operator, body: CancelBody | None = None
) -> dict[str, str]:
    """Cancel the run; a model call or tool in flight is interrupted."""
    harness = harness_of(request)
    await _run(harness, run_id)
    reason = body.reason if body is not None else None
    await harness.cancel(run_id, reason=reason, by=f"token:{principal.name}")
    return {"run_id": run_id, "requested": "cancel"}


@router.post("/runs/{run_id}/approvals/{call_id}", summary="Approve or deny a waiting call")
async def decide(
    request: Request, run_id: str, call_id: str, body: DecisionBody, principal: Operator
) -> dict[str, str]:
    """Decide a tool call that waits for approval; the first decision stands (else 409)."""
    harness = harness_of(request)
    await _run(harness, run_id)
    waiting = [p["call_id"] for p in await harness.pending_approvals(run_id)]
    if call_id not in waiting:
        earlier = await harness.decision(run_id, call_id)
        if earlier is not None:
            raise already_decided(earlier)
        listed = ", ".join(waiting) or "none"
        raise Problem(
            409, f"call {call_id} of run {run_id} is not waiting for approval (waiting: {listed})"
        )
    by = f"token:{principal.name}"
    if body.decision == "approve":
        await harness.approve(run_id, call_id, by=by)
    else:
        await harness.deny(run_id, call_id, reason=body.reason or "denied", by=by)
    return {"run_id": run_id, "call_id": call_id, "decision": body.decision}


@router.get("/approvals", summary="Tool calls waiting for approval")
async def approvals(request: Request, _: Reader) -> dict[str, Any]:
    """Every tool call waiting for a decision, in every run."""
    return {"approvals": await harness_of(request).pending_approvals()}
