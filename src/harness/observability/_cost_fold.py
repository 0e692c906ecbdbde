"""One run's model requests and tool shares, folded from its stored events and message sizes.

The events read are few (`FOLDED_TYPES`), dispatched on their payload's class.

A model request is a `model_responded` event (or the summary request of a
`context_compacted` event). The model that answered it is the one the event names, else
the last `to_model` of the `model_fallback` notices of its request, else the model the
`model_called` event named. The agent that made it is the run's agent at that point: a
`handoff` event moves the run to another agent, so a run handed over splits between them.
Its price is known when the event carries the prices it was charged at, or (events written
before prices were recorded) when it cost more than zero.

A tool result is in the history from the reply that called it on (results a resumed run
inherited, from its start), and a request carries it unless a `context_compacted` event
before the request stopped sending it: its `state.history_index` is the first history
message still sent after the task.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from harness.core.events import (
    ContextCompacted,
    Handoff,
    ModelCalled,
    ModelFallback,
    ModelResponded,
    RunEvent,
    ToolCompleted,
    payloads,
)
from harness.core.usage import Prices, Usage
from harness.store.protocol import MessageTokens

__all__ = [
    "FOLDED_TYPES",
    "Request",
    "RunFold",
    "ToolCallDone",
    "ToolShare",
    "fold_run",
    "tool_names",
    "unnamed_calls",
]

FOLDED_TYPES: Final = (
    "model_called",
    "model_fallback",
    "model_responded",
    "tool_completed",
    "context_compacted",
    "handoff",
)
"""The event types the fold reads."""

_PER: Final = 1_000_000


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolShare:
    """The results of one tool carried by one model request."""

    tool: str
    """The tool."""
    tokens: int
    """Tokens of its results in the request (the messages' stored counts)."""
    cached: float
    """The part of `tokens` the provider served from its cache, pro rata."""
    usd: float | None
    """What they cost at the request's input (and cached input) price; `None` if unknown."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Request:
    """One model request of a run, as its events recorded it."""

    model: str
    """The model that answered."""
    usage: Usage
    """What the provider reported for it."""
    usd: float | None
    """What it cost; `None` when its price is unknown."""
    shares: tuple[ToolShare, ...] = ()
    """The tool results it carried, by tool."""
    agent: str | None = None
    """The agent that made it, when the run was handed over; `None`: the run's agent."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallDone:
    """One tool call that ran (calls never run, `not_run`, are left out)."""

    tool: str
    """The tool."""
    model: str | None
    """The model whose reply made the call, when known."""
    seconds: float
    """How long it ran."""
    agent: str | None = None
    """The agent whose reply made the call, when the run was handed over; `None`: the
    run's agent."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunFold:
    """What one run consumed, request by request, and its tools' calls and results."""

    requests: tuple[Request, ...]
    """Its model requests."""
    calls: tuple[ToolCallDone, ...]
    """Its tool calls that ran."""
    result_tokens: Mapping[tuple[str, str | None, str | None], int]
    """Tokens of the results in its history (each once), by tool, the model whose reply
    made the call (`None` when unknown) and its agent (`None`: the run's)."""


@dataclass(kw_only=True, slots=True)
class _Result:
    call_id: str
    index: int
    """Its index in the run's full history (its message `seq` less one)."""
    tokens: int


@dataclass(kw_only=True, slots=True)
class _Pending:
    called: str | None = None
    request_id: str | None = None
    fell_back_to: str | None = None


@dataclass(kw_only=True, slots=True)
class _State:
    results: dict[str, deque[_Result]]
    """The results of each call id not yet in the history, in order."""
    names: dict[str, str]
    sent: list[_Result] = field(default_factory=lambda: [])
    history_index: int = 0
    pending: _Pending = field(default_factory=_Pending)
    last_model: str | None = None
    agent: str | None = None
    """The agent the run is under, once a handoff says (before: the first handoff's
    `from_agent`; `None` in a run never handed over)."""
    call_models: dict[str, str] = field(default_factory=lambda: {})
    call_agents: dict[str, str | None] = field(default_factory=lambda: {})
    requests: list[Request] = field(default_factory=lambda: [])
    calls: list[ToolCallDone] = field(default_factory=lambda: [])


def fold_run(
    events: Sequence[RunEvent],
    tool_messages: Sequence[MessageTokens],
    *,
    run_model: str | None,
    known_names: Mapping[str, str] | None = None,
) -> RunFold:
    """Fold one run's events (of `FOLDED_TYPES`, in order) and its tool messages' sizes.

    Args:
        events: The run's events of `FOLDED_TYPES`, in `seq` order.
        tool_messages: The sizes of its `tool` messages.
        run_model: The model the run was created with: the name of last resort.
        known_names: Tool names of calls its events do not name (from a parent run).
    """
    every = [
        _Result(call_id=m.tool_call_id, index=m.seq - 1, tokens=m.tokens or 0)
        for m in tool_messages
        if m.tool_call_id is not None
    ]
    asked = _asked(events)
    results: dict[str, deque[_Result]] = {}
    for result in every:
        if result.call_id in asked:
            results.setdefault(result.call_id, deque()).append(result)
    names = {**(known_names or {}), **_names(events)}
    first = next(iter(payloads(events, Handoff)), None)
    agent = None if first is None else first.from_agent
    state = _State(results=results, names=names, last_model=run_model, agent=agent)
    state.sent = [r for r in every if r.call_id not in asked]  # a resumed run inherited them
    for event in events:
        _see(state, event)
    tokens: dict[tuple[str, str | None, str | None], int] = {}
    for result in every:
        call = result.call_id
        key = (names.get(call, "?"), state.call_models.get(call), state.call_agents.get(call))
        tokens[key] = tokens.get(key, 0) + result.tokens
    return RunFold(requests=tuple(state.requests), calls=tuple(state.calls), result_tokens=tokens)


def unnamed_calls(events: Sequence[RunEvent], tool_messages: Iterable[MessageTokens]) -> set[str]:
    """Call ids of tool messages whose tool the run's own events never name."""
    names = _names(events)
    return {m.tool_call_id for m in tool_messages if m.tool_call_id and m.tool_call_id not in names}


def tool_names(events: Iterable[RunEvent]) -> dict[str, str]:
    """The tool of each call id that the events name."""
    return _names(events)


def _see(state: _State, event: RunEvent) -> None:
    match event.payload:
        case ModelCalled(model=model, request_id=request_id):
            state.pending = _Pending(called=model, request_id=request_id)
        case ModelFallback(request_id=request_id, to_model=to_model):
            if request_id in (None, state.pending.request_id):
                state.pending.fell_back_to = to_model
        case ModelResponded() as responded:
            _responded(state, responded)
        case ToolCompleted() as completed:
            _completed(state, completed)
        case ContextCompacted() as compacted:
            _compacted(state, compacted)
        case Handoff(to_agent=to_agent):
            state.agent = to_agent
        case _:
            pass


def _responded(state: _State, event: ModelResponded) -> None:
    pending = state.pending
    model = event.model or pending.fell_back_to or pending.called or state.last_model or "?"
    carried = [r for r in state.sent if r.index >= state.history_index]
    shares = _shares(carried, state.names, event.usage, event.prices)
    usd = _usd(event.usage, event.prices)
    state.requests.append(
        Request(model=model, usage=event.usage, usd=usd, shares=shares, agent=state.agent)
    )
    state.last_model, state.pending = model, _Pending()
    for call in event.tool_calls:
        state.call_models[call.id] = model
        state.call_agents[call.id] = state.agent
        waiting = state.results.get(call.id)
        if waiting:
            state.sent.append(waiting.popleft())


def _completed(state: _State, event: ToolCompleted) -> None:
    if event.status == "not_run":
        return
    call = ToolCallDone(
        tool=event.tool,
        model=state.call_models.get(event.call_id),
        seconds=event.duration_s,
        agent=state.call_agents.get(event.call_id, state.agent),
    )
    state.calls.append(call)


def _compacted(state: _State, event: ContextCompacted) -> None:
    if event.state is not None:
        state.history_index = int(event.state.get("history_index") or 0)
    usage = event.usage
    if usage.requests or usage.input_tokens or usage.output_tokens:  # a summary was asked
        model = event.model or state.last_model or "?"
        usd = _usd(usage, event.prices)
        state.requests.append(Request(model=model, usage=usage, usd=usd, agent=state.agent))


def _shares(
    carried: Sequence[_Result], names: Mapping[str, str], usage: Usage, prices: Prices | None
) -> tuple[ToolShare, ...]:
    """Each tool's results in one request, priced at its input and cached input prices."""
    tokens: dict[str, int] = {}
    for result in carried:
        tool = names.get(result.call_id, "?")
        tokens[tool] = tokens.get(tool, 0) + result.tokens
    cached = min(usage.cached_tokens, usage.input_tokens)
    share = cached / usage.input_tokens if usage.input_tokens else 0.0
    per_token = None
    if prices is not None:
        per_token = ((1 - share) * prices.input + share * prices.cached_price) / _PER
    return tuple(
        ToolShare(
            tool=tool,
            tokens=count,
            cached=count * share,
            usd=None if per_token is None else count * per_token,
        )
        for tool, count in tokens.items()
    )


def _usd(usage: Usage, prices: Prices | None) -> float | None:
    """What a request cost: known when it was priced, or (older events) cost anything."""
    if prices is not None or usage.cost_usd > 0:
        return usage.cost_usd
    return None


def _asked(events: Iterable[RunEvent]) -> set[str]:
    """Ids of the calls the run's own replies made."""
    return {call.id for reply in payloads(events, ModelResponded) for call in reply.tool_calls}


def _names(events: Iterable[RunEvent]) -> dict[str, str]:
    names: dict[str, str] = {}
    for event in events:
        match event.payload:
            case ModelResponded(tool_calls=calls):
                names.update((call.id, call.name) for call in calls)
            case ToolCompleted(call_id=call_id, tool=tool):
                names[call_id] = tool
            case _:
                pass
    return names
