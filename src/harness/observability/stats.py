"""`harness stats`: how past runs went, from the store, for runs of any process.

One query lists the runs created in the window; their events of the kinds that matter come
in a few batched queries (`EventStore.events_of_runs`), never one query per run. From them:

- tools: executed calls, calls per step, success rate and duration (p50/p95) per tool, from
  `tool_completed`; calls the loop did not run (`not_run`: a budget or a stop came first)
  are counted apart and are in neither the calls nor the success rate;
- context: the input tokens of each model reply by step index, the median across runs (a run
  with several replies in one step counts its largest);
- step latency: from `step_started` to the run's next `step_started`, `run_paused` or end
  event (a step cut by a takeover, ended by `run_recovered`, is not timed);
- model call latency per model (`model_responded.duration_s`, under the model that
  `model_called` named);
- termination reasons of ended runs and the states of all runs.

Percentiles interpolate linearly between the two nearest values, so p50 is the median.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import groupby
from typing import Any, Final

from harness.core.events import (
    EventType,
    ModelCalled,
    ModelResponded,
    RunCancelled,
    RunEvent,
    RunFailed,
    RunFinished,
    RunPaused,
    RunRecovered,
    StepStarted,
    ToolCompleted,
)
from harness.store.protocol import EventStore, RunRecord

__all__ = [
    "ModelLatency",
    "Share",
    "Spread",
    "Stats",
    "StepTokens",
    "ToolStats",
    "compute_stats",
    "percentile",
    "stats_to_dict",
]

STAT_EVENTS: Final[tuple[EventType, ...]] = tuple(
    kind.type
    for kind in (
        StepStarted,
        ModelCalled,
        ModelResponded,
        ToolCompleted,
        RunPaused,
        RunRecovered,
        RunFinished,
        RunFailed,
        RunCancelled,
    )
)
"""The event types the statistics read; the last five (and `step_started`) bound steps."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Spread:
    """A distribution in three numbers."""

    count: int
    """How many values."""
    p50: float | None
    """The median; `None` without values."""
    p95: float | None
    """The 95th percentile; `None` without values."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolStats:
    """How one tool's calls went."""

    tool: str
    """The tool's name, as the model called it."""
    calls: int
    """Calls that were executed (ended `ok` or in a failure the model was told about)."""
    ok: int
    """Executed calls that succeeded."""
    failed: int
    """Executed calls that failed (any status but `ok`)."""
    not_run: int
    """Calls the model asked for that the loop did not run."""
    calls_per_step: float
    """Executed calls over every step of the runs in the report."""
    success_rate: float | None
    """`ok / calls`; `None` without executed calls."""
    duration_s: Spread
    """Seconds per executed call."""


@dataclass(frozen=True, kw_only=True, slots=True)
class StepTokens:
    """The context sent at one step index, across runs."""

    step: int
    """The step index, from 1."""
    runs: int
    """Runs with a model reply at this step."""
    median_input_tokens: float
    """The median of those runs' input tokens at this step."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelLatency:
    """How long one model took to answer."""

    model: str
    """The model's name, as `model_called` reported it."""
    duration_s: Spread
    """Seconds per call."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Share:
    """One value of a category and how often it occurred."""

    name: str
    """The value, e.g. a termination reason or a state."""
    count: int
    """How many runs."""
    share: float
    """`count` over the runs counted in the category, from 0 to 1."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Stats:
    """Everything `harness stats` reports about the runs of a window."""

    since: float | None
    """Runs created at or after this time (seconds since the epoch) are counted."""
    agent: str | None
    """Only this agent's runs, when set."""
    task_type: str | None
    """Only runs of this task type, when set."""
    runs: int
    """Runs counted."""
    steps: int
    """Steps they started."""
    tool_calls: int
    """Tool calls they executed."""
    tool_calls_per_step: float | None
    """`tool_calls / steps`; `None` without steps."""
    tools: tuple[ToolStats, ...]
    """Per tool, the most called first."""
    context_tokens: tuple[StepTokens, ...]
    """Input tokens by step index, in step order: the context-size trend."""
    step_latency_s: Spread
    """Seconds per step."""
    models: tuple[ModelLatency, ...]
    """Model call latency per model, by name."""
    terminations: tuple[Share, ...]
    """Why the ended runs ended, the most common first."""
    states: tuple[Share, ...]
    """Where every run counted is in its lifecycle, the most common first."""


@dataclass(kw_only=True)
class _Tally:
    """What the runs' events add up to, while they are read."""

    steps: int = 0
    step_seconds: list[float] = field(default_factory=lambda: [])
    tool_seconds: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    tool_ok: Counter[str] = field(default_factory=lambda: Counter[str]())
    tool_failed: Counter[str] = field(default_factory=lambda: Counter[str]())
    tool_not_run: Counter[str] = field(default_factory=lambda: Counter[str]())
    step_tokens: defaultdict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    model_seconds: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))


async def compute_stats(
    store: EventStore,
    *,
    since: float | None = None,
    agent: str | None = None,
    task_type: str | None = None,
) -> Stats:
    """The statistics of the runs created since `since`, of `agent` and `task_type` if set.

    Args:
        store: An open store.
        since: Seconds since the epoch; every run when `None`.
        agent: Only this agent's runs.
        task_type: Only runs of this task type.
    """
    records = await store.list_runs(since=since, agent=agent, task_type=task_type, limit=None)
    events = await store.events_of_runs([r.run_id for r in records], types=STAT_EVENTS)
    tally = _Tally()
    for _, run_events in groupby(events, key=lambda event: event.run_id):
        _fold_run(tally, tuple(run_events))
    return _stats(tally, records, since=since, agent=agent, task_type=task_type)


def stats_to_dict(stats: Stats) -> dict[str, Any]:
    """`stats` as JSON-compatible data; the keys are the field names, and stay stable."""
    return asdict(stats)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The `q` quantile (0 to 1) of `values`, interpolated linearly; `None` when empty."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _fold_run(tally: _Tally, events: Sequence[RunEvent]) -> None:
    """Add one run's events (in seq order) to `tally`."""
    steps = _StepClock(tally=tally)
    model = "unknown"
    tokens: dict[int, int] = {}
    for event in events:
        match event.payload:
            case ModelCalled(model=name):
                model = name
            case ModelResponded(step=step, usage=usage, duration_s=seconds):
                tally.model_seconds[model].append(seconds)
                tokens[step] = max(tokens.get(step, 0), usage.input_tokens)
            case ToolCompleted() as done:
                _count_tool(tally, done)
            case _:
                steps.mark(event)
    for step, count in tokens.items():
        tally.step_tokens[step].append(count)


@dataclass(kw_only=True)
class _StepClock:
    """Times one run's steps: each from its `step_started` to the next boundary."""

    tally: _Tally
    started: float | None = None

    def mark(self, event: RunEvent) -> None:
        """Start, end or drop the open step at `event`."""
        if isinstance(event.payload, RunRecovered):  # the step was cut short by a takeover
            self.started = None
            return
        if self.started is not None:
            self.tally.step_seconds.append(event.ts - self.started)
        self.started = None
        if isinstance(event.payload, StepStarted):
            self.started = event.ts
            self.tally.steps += 1


def _count_tool(tally: _Tally, done: ToolCompleted) -> None:
    """Add one completed (or not run) tool call to `tally`."""
    if done.status == "not_run":
        tally.tool_not_run[done.tool] += 1
        return
    tally.tool_seconds[done.tool].append(done.duration_s)
    (tally.tool_ok if done.ok else tally.tool_failed)[done.tool] += 1


def _stats(
    tally: _Tally,
    records: Sequence[RunRecord],
    *,
    since: float | None,
    agent: str | None,
    task_type: str | None,
) -> Stats:
    calls = sum(len(seconds) for seconds in tally.tool_seconds.values())
    return Stats(
        since=since,
        agent=agent,
        task_type=task_type,
        runs=len(records),
        steps=tally.steps,
        tool_calls=calls,
        tool_calls_per_step=calls / tally.steps if tally.steps else None,
        tools=_tools(tally),
        context_tokens=tuple(
            StepTokens(step=step, runs=len(counts), median_input_tokens=_median(counts))
            for step, counts in sorted(tally.step_tokens.items())
        ),
        step_latency_s=_spread(tally.step_seconds),
        models=tuple(
            ModelLatency(model=model, duration_s=_spread(seconds))
            for model, seconds in sorted(tally.model_seconds.items())
        ),
        terminations=_shares(r.termination for r in records if r.termination is not None),
        states=_shares(r.state for r in records),
    )


def _tools(tally: _Tally) -> tuple[ToolStats, ...]:
    names = set(tally.tool_seconds) | set(tally.tool_not_run)
    found = [_tool(tally, name) for name in names]
    return tuple(sorted(found, key=lambda t: (-t.calls, -t.not_run, t.tool)))


def _tool(tally: _Tally, name: str) -> ToolStats:
    seconds = tally.tool_seconds.get(name, [])
    ok = tally.tool_ok[name]
    return ToolStats(
        tool=name,
        calls=len(seconds),
        ok=ok,
        failed=tally.tool_failed[name],
        not_run=tally.tool_not_run[name],
        calls_per_step=len(seconds) / tally.steps if tally.steps else 0.0,
        success_rate=ok / len(seconds) if seconds else None,
        duration_s=_spread(seconds),
    )


def _spread(values: Sequence[float]) -> Spread:
    return Spread(count=len(values), p50=percentile(values, 0.5), p95=percentile(values, 0.95))


def _median(values: Sequence[int]) -> float:
    middle = percentile([float(v) for v in values], 0.5)
    assert middle is not None  # a step index is listed only with a value
    return middle


def _shares(values: Iterable[str]) -> tuple[Share, ...]:
    counts = Counter(values)
    total = sum(counts.values())
    return tuple(
        Share(name=name, count=count, share=count / total)
        for name, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    )
