"""Prometheus metrics of runs, kept by a subscriber of the event bus.

The one home of `prometheus_client`. A `MetricsSubscriber` sees each event once it is
committed and counts it in a registry of its own (never the library's global one, so that
several `Harness` objects in one process keep apart). Every name starts with `harness_`
and carries its unit:

```text
harness_runs_finished_total{agent,task_type,termination}    runs ended (finished, failed, cancelled)
harness_runs_in_flight                                      runs executing in this process
harness_runs_pending                                        PENDING runs in the store (at scrape)
harness_step_duration_seconds{agent,task_type}              histogram: step_started to the next step
harness_model_call_duration_seconds{model}                  histogram: a call, retries included
harness_model_retries_total{model}                          retries of failed model calls
harness_model_fallbacks_total{from_model,to_model,reason}   moves to a fallback model
harness_model_tokens_total{model,task_type,kind}            kind: input, output, cached, reasoning
harness_model_cost_usd_total{model,task_type}               from the profiles' prices
harness_tool_calls_total{tool,status}                       ok, tool_error, tool_timeout, denied, …
harness_tool_duration_seconds{tool}                         histogram (calls that ran)
harness_context_tokens{model}                               histogram: input tokens of each request
harness_context_compactions_total{tier}                     trim, summarize, stage_summary
harness_experiment_runs_finished_total{experiment,variant,termination}   runs of A/B variants
harness_experiment_cost_usd_total{experiment,variant}       model cost of A/B variants
```

Labels are bounded: never a run id, call id or text, and each dimension keeps its first
`max_label_values` distinct values; later ones are counted as `other`. The model label is
the model that answered: the first member of a fallback chain, or the one it fell back to.
Tokens and cost of a compaction's summary request count under the run's model too. A run
without a task type has `task_type=""`.

The counts are plain Python lists updated in place (`harness.observability._families`),
read out by a collector of the registry at each scrape, sample for sample what
prometheus_client's `Counter` and `Histogram` write: an event costs a dict look-up and an
addition, not a lock and a chain of calls. So the registry is read on the event loop's
thread (`render`, `harness.observability.serve`), where the events are counted.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, Final, cast

from prometheus_client import CollectorRegistry, Gauge, Metric, generate_latest
from prometheus_client import utils as prometheus_utils
from prometheus_client.registry import Collector

from harness.core.events import (
    ContextCompacted,
    EventPayload,
    ModelCalled,
    ModelFallback,
    ModelResponded,
    ModelRetry,
    RunCancelled,
    RunEvent,
    RunFailed,
    RunFinished,
    RunPaused,
    RunStarted,
    RunSubmitted,
    StepStarted,
    ToolCompleted,
)
from harness.core.usage import Usage
from harness.observability._families import CounterFamily, HistogramFamily, observe
from harness.observability._runs import RunFollow, RunTable

__all__ = ["CONTENT_TYPE", "OTHER", "FamilyCollector", "MetricsSubscriber", "histogram"]

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
"""The media type of `MetricsSubscriber.render`'s text (Prometheus text format 0.0.4)."""

OTHER: Final = "other"
"""The label value of everything past a dimension's first `max_label_values` values."""

_MAX_CHARS = 120
_STEP_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900)
_MODEL_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300)
_TOOL_BUCKETS = (0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120)
_TOKEN_BUCKETS = tuple(float(2**n) for n in range(8, 21))  # 256 … 1,048,576
_CREATED: Final = os.environ.get("PROMETHEUS_DISABLE_CREATED_SERIES", "False").lower() not in (
    *("true", "1", "t"),
)
"""Whether `_created` samples are written: prometheus_client's own switch, read as it does."""
_DIMENSIONS = (
    *("agent", "task_type", "model", "tool", "status", "reason", "tier", "termination"),
    *("experiment", "variant"),
)


class _Capped:
    """The label values of one dimension: the first `limit` distinct ones, then `other`."""

    __slots__ = ("_limit", "_seen")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._seen: dict[str, str] = {}

    def __call__(self, value: str) -> str:
        kept = self._seen.get(value)
        if kept is not None:
            return kept
        if len(self._seen) >= self._limit:
            return OTHER
        kept = self._seen[value] = value[:_MAX_CHARS]
        return kept


_go_float = cast(Callable[[float], str], prometheus_utils.floatToGoString)  # pyright: ignore[reportUnknownMemberType]
"""A number as Prometheus writes it in a label (`le="1.048576e+06"`)."""


def histogram(name: str, doc: str, buckets: tuple[float, ...], *labels: str) -> HistogramFamily:
    """A histogram family with these buckets (`+Inf` added), its `le` labels as Prometheus's."""
    le = tuple(_go_float(b) for b in (*buckets, float("inf")))
    return HistogramFamily(name, doc, buckets, le, *labels)


class FamilyCollector(Collector):
    """Reads plain families out as prometheus_client `Metric`s, at each scrape.

    Args:
        families: The families, in the order they are written.
    """

    def __init__(self, families: Sequence[CounterFamily | HistogramFamily]) -> None:
        self._families = tuple(families)

    def describe(self) -> Iterator[Metric]:
        """The families, without samples (their names, for the registry)."""
        for family in self._families:
            yield Metric(family.name, family.doc, family.type)

    def collect(self) -> Iterator[Metric]:
        """The families and their samples now."""
        for family in self._families:
            metric = Metric(family.name, family.doc, family.type)
            for name, labels, value in family.samples(_CREATED):
                metric.add_sample(name, labels, value)
            yield metric


class _Instruments:
    """The metric families, kept in plain Python (`FamilyCollector` writes them)."""

    def __init__(self) -> None:
        self.runs = CounterFamily(
            "harness_runs_finished",
            "Runs that ended (finished, failed or cancelled), by termination reason.",
            *("agent", "task_type", "termination"),
        )
        self.steps = histogram(
            "harness_step_duration_seconds",
            "Steps, from step_started to the next step or the run's end or pause.",
            _STEP_BUCKETS,
            *("agent", "task_type"),
        )
        self.model_calls = histogram(
            "harness_model_call_duration_seconds",
            "Model calls, retries and fallbacks included.",
            _MODEL_BUCKETS,
            "model",
        )
        self.retries = CounterFamily(
            "harness_model_retries", "Retries of failed model calls.", "model"
        )
        self.fallbacks = CounterFamily(
            "harness_model_fallbacks",
            "Requests moved to a fallback model.",
            *("from_model", "to_model", "reason"),
        )
        self.tokens = CounterFamily(
            "harness_model_tokens",
            "Model tokens by kind: input (cached included), output (reasoning included), "
            "cached, reasoning.",
            *("model", "task_type", "kind"),
        )
        self.cost = CounterFamily(
            "harness_model_cost_usd", "Model cost in US dollars.", "model", "task_type"
        )
        self.tool_calls = CounterFamily(
            "harness_tool_calls", "Tool calls, by status.", "tool", "status"
        )
        self.tool_duration = histogram(
            "harness_tool_duration_seconds", "Tool calls that ran.", _TOOL_BUCKETS, "tool"
        )
        self.context = histogram(
            "harness_context_tokens", "Input tokens of each model request.", _TOKEN_BUCKETS, "model"
        )
        self.compactions = CounterFamily(
            "harness_context_compactions", "Context compactions, by tier.", "tier"
        )
        self.variant_runs = CounterFamily(
            "harness_experiment_runs_finished",
            "Runs of an A/B experiment's variants that ended, by termination reason.",
            *("experiment", "variant", "termination"),
        )
        self.variant_cost = CounterFamily(
            "harness_experiment_cost_usd",
            "Model cost of an A/B experiment's variants in US dollars.",
            *("experiment", "variant"),
        )
        self.all = (
            *(self.runs, self.steps, self.model_calls, self.retries, self.fallbacks),
            *(self.tokens, self.cost, self.tool_calls, self.tool_duration, self.context),
            *(self.compactions, self.variant_runs, self.variant_cost),
        )


class MetricsSubscriber:
    """Counts committed run events as Prometheus metrics; subscribe it to an `EventBus`.

    Args:
        max_label_values: Distinct values kept per label dimension (agents, task types,
            models, tools, …); later ones are counted as `other`.
        max_runs: Runs whose labels are remembered at once (the oldest are forgotten).
    """

    def __init__(self, *, max_label_values: int = 50, max_runs: int = 10_000) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        """The registry that holds this subscriber's metrics (not the global one).

        Read it on the event loop's thread (as `render` does): the counts are updated there.
        """
        self._m = _Instruments()
        self.registry.register(FamilyCollector(self._m.all))
        caps = {name: _Capped(max_label_values) for name in _DIMENSIONS}
        self._agent, self._task_type, self._model = caps["agent"], caps["task_type"], caps["model"]
        self._tool, self._status, self._reason = caps["tool"], caps["status"], caps["reason"]
        self._tier, self._termination = caps["tier"], caps["termination"]
        self._experiment, self._variant = caps["experiment"], caps["variant"]
        self._runs = RunTable(max_runs)
        self._pending: Callable[[], Awaitable[int]] | None = None
        self._in_flight: Callable[[], int] = lambda: 0
        self._pending_gauge: Gauge | None = None
        self._tokens: dict[tuple[str, str], tuple[list[float], ...]] = {}
        self._answered: dict[str, tuple[str, list[float], list[float]]] = {}
        """By the label of a model that answered: its label value and its series."""
        self._tool_series: dict[tuple[str, str], tuple[list[float], list[float] | None]] = {}
        """By tool and status: the series of its calls and (if it ran) of their duration."""
        self._step_series: dict[tuple[str, str], list[float]] = {}
        """By agent and task type: the series of their steps' durations."""
        self._ended_series: dict[tuple[str, str, str], list[float]] = {}
        """By agent, task type and termination: the series of runs that ended so."""
        self._max_label_values = max_label_values
        """The four token series (input, output, cached, reasoning) of a model and task type."""
        self._handlers: dict[type[EventPayload], Callable[[RunFollow, RunEvent, Any], None]] = {
            RunSubmitted: self._submitted,
            RunStarted: self._started,
            StepStarted: self._step,
            ModelCalled: self._called,
            ModelRetry: self._retry,
            ModelFallback: self._fallback,
            ModelResponded: self._responded,
            ContextCompacted: self._compacted,
            ToolCompleted: self._tool_completed,
            RunPaused: self._paused,
            RunFinished: self._ended,
            RunFailed: self._ended,
            RunCancelled: self._ended,
        }
        self.event_types = frozenset(self._handlers)
        """The event classes it counts: the bus passes any other by (`EventBus.subscribe`)."""

    def __call__(self, event: RunEvent) -> None:
        """Count one committed event (the `EventBus` subscriber)."""
        handler = self._handlers.get(type(event.payload))
        if handler is not None:
            handler(self._runs.get(event.run_id), event, event.payload)

    def batch(self, events: Sequence[RunEvent]) -> None:
        """Count one run's events committed together (the `EventBus` batch subscriber)."""
        handlers, run = self._handlers, self._runs.get(events[0].run_id)  # one run's step
        for event in events:
            payload = event.payload
            handler = handlers.get(type(payload))
            if handler is not None:
                handler(run, event, payload)

    def note_run(
        self,
        run_id: str,
        *,
        agent: str,
        task_type: str | None = None,
        model: str | None = None,
        variant: tuple[str, str] | None = None,
    ) -> None:
        """Tell the labels of a run this process took from the store (claimed, taken over).

        Its later events are counted under them, even though this process never saw the
        run's `run_submitted`.
        """
        self._runs.learn(run_id, agent, task_type, model, variant)

    def track(self, *, in_flight: Callable[[], int], pending: Callable[[], Awaitable[int]]) -> None:
        """Add the gauges read at scrape time: runs executing here, and queued runs.

        Called again (the subscriber reused by another `Harness`), it reads the new ones.

        Args:
            in_flight: How many runs this process executes now.
            pending: How many runs wait in the store (`PENDING`), from any process.
        """
        if self._pending_gauge is None:
            registry = self.registry
            running = Gauge("harness_runs_in_flight", "Runs executing here.", registry=registry)
            running.set_function(lambda: float(self._in_flight()))
            self._pending_gauge = Gauge(
                "harness_runs_pending", "Runs waiting in the store.", registry=registry
            )
        self._in_flight, self._pending = in_flight, pending

    async def render(self) -> bytes:
        """The metrics in the Prometheus text format (`CONTENT_TYPE`), gauges read now."""
        if self._pending is not None and self._pending_gauge is not None:
            self._pending_gauge.set(await self._pending())
        return generate_latest(self.registry)

    # --- one handler per event type -------------------------------------------------

    def _submitted(self, run: RunFollow, _: RunEvent, p: RunSubmitted) -> None:
        variant = (p.experiment, p.variant) if p.experiment and p.variant else None
        run.learn(p.agent, p.task_type, None, variant)

    def _started(self, run: RunFollow, _: RunEvent, p: RunStarted) -> None:
        variant = (p.experiment, p.variant) if p.experiment and p.variant else None
        run.learn(p.agent, p.task_type, p.model, variant)

    def _step(self, run: RunFollow, event: RunEvent, _: StepStarted) -> None:
        if run.step_started is not None:
            self._close_step(run, event.ts)
        run.step_started = event.ts

    def _called(self, run: RunFollow, _: RunEvent, p: ModelCalled) -> None:
        run.answering(p.model)

    def _retry(self, _run: RunFollow, _: RunEvent, p: ModelRetry) -> None:
        self._m.retries.child(self._model(p.model))[0] += 1

    def _fallback(self, run: RunFollow, _: RunEvent, p: ModelFallback) -> None:
        from_model, to_model = self._model(p.from_model), self._model(p.to_model)
        self._m.fallbacks.child(from_model, to_model, self._reason(p.reason))[0] += 1
        run.model = p.to_model

    def _responded(self, run: RunFollow, _: RunEvent, p: ModelResponded) -> None:
        label = p.model or run.model  # the profile that answered, as `harness cost`
        model, calls, context = self._answered.get(label) or self._answering(label)
        task_type = run.task_label
        if task_type is None:
            task_type = run.task_label = self._task_type(run.task_type)
        usage = p.usage
        self._count_usage(model, task_type, usage)
        if run.variant is not None:
            self._count_variant(run.variant, usage)
        duration = p.duration_s
        if duration == duration:  # `observe`, inline: NaN falls in no bucket
            calls[bisect_left(self._m.model_calls.bounds, duration)] += 1
        calls[-2] += duration
        tokens = usage.input_tokens
        if tokens > 0:
            context[bisect_left(self._m.context.bounds, tokens)] += 1
            context[-2] += tokens

    def _answering(self, label: str) -> tuple[str, list[float], list[float]]:
        """A model's label value, and its call-duration and context-token series."""
        if len(self._answered) >= 4 * self._max_label_values:
            self._answered.clear()  # labels past the cap are many: keep the cache bounded
        model = self._model(label)
        found = model, self._m.model_calls.child(model), self._m.context.child(model)
        self._answered[label] = found
        return found

    def _compacted(self, run: RunFollow, _: RunEvent, p: ContextCompacted) -> None:
        self._m.compactions.child(self._tier(p.tier))[0] += 1
        model, task_type = self._model(run.model), self._task_type(run.task_type)
        self._count_usage(model, task_type, p.usage)
        if run.variant is not None:
            self._count_variant(run.variant, p.usage)

    def _tool_completed(self, _run: RunFollow, _: RunEvent, p: ToolCompleted) -> None:
        calls, duration = self._tool_series.get((p.tool, p.status)) or self._tool_calls(p)
        calls[0] += 1
        if duration is not None:
            observe(self._m.tool_duration, duration, p.duration_s)

    def _tool_calls(self, p: ToolCompleted) -> tuple[list[float], list[float] | None]:
        """The call-count series of a tool and status, and its duration series if it ran."""
        if len(self._tool_series) >= 4 * self._max_label_values:
            self._tool_series.clear()  # labels past the cap are many: keep the cache bounded
        tool, m = self._tool(p.tool), self._m
        calls = m.tool_calls.child(tool, self._status(p.status))
        ran = p.status != "not_run"
        found = calls, m.tool_duration.child(tool) if ran else None
        self._tool_series[p.tool, p.status] = found
        return found

    def _paused(self, run: RunFollow, event: RunEvent, _: RunPaused) -> None:
        self._close_step(run, event.ts)
        self._runs.forget(event.run_id)

    def _ended(
        self, run: RunFollow, event: RunEvent, p: RunFinished | RunFailed | RunCancelled
    ) -> None:
        if run.step_started is not None:
            self._close_step(run, event.ts)
        reason = "cancelled" if isinstance(p, RunCancelled) else p.termination
        ended = self._ended_series.get((run.agent, run.task_type, reason))
        if ended is None:
            ended = self._runs_ended(run.agent, run.task_type, reason)
        ended[0] += 1
        if run.variant is not None:
            experiment, variant = self._experiment(run.variant[0]), self._variant(run.variant[1])
            series = self._m.variant_runs.child(experiment, variant, self._termination(reason))
            series[0] += 1
        self._runs.forget(event.run_id)

    # --- helpers --------------------------------------------------------------------

    def _runs_ended(self, agent: str, task_type: str, reason: str) -> list[float]:
        """The series of runs of `agent` and `task_type` that ended for `reason` (kept)."""
        if len(self._ended_series) >= 4 * self._max_label_values:
            self._ended_series.clear()  # labels past the cap are many: keep the cache bounded
        labels = self._agent(agent), self._task_type(task_type), self._termination(reason)
        found = self._ended_series[agent, task_type, reason] = self._m.runs.child(*labels)
        return found

    def _steps_of(self, agent: str, task_type: str) -> list[float]:
        """The step-duration series of `agent` and `task_type` (kept)."""
        if len(self._step_series) >= 4 * self._max_label_values:
            self._step_series.clear()  # labels past the cap are many: keep the cache bounded
        labels = self._agent(agent), self._task_type(task_type)
        found = self._step_series[agent, task_type] = self._m.steps.child(*labels)
        return found

    def _close_step(self, run: RunFollow, ts: float) -> None:
        if run.step_started is None:
            return
        series = run.steps
        if series is None:
            key = run.agent, run.task_type
            series = run.steps = self._step_series.get(key) or self._steps_of(*key)
        duration = ts - run.step_started
        if duration > 0.0:  # `observe`, inline
            series[bisect_left(self._m.steps.bounds, duration)] += 1
            series[-2] += duration
        else:
            series[0] += 1
        run.step_started = None

    def _count_usage(self, model: str, task_type: str, usage: Usage) -> None:
        tokens = self._tokens.get((model, task_type))
        if tokens is None:
            kinds = ("input", "output", "cached", "reasoning")
            tokens = tuple(self._m.tokens.child(model, task_type, kind) for kind in kinds)
            self._tokens[model, task_type] = tokens
        if usage.input_tokens:
            tokens[0][0] += usage.input_tokens
        if usage.output_tokens:
            tokens[1][0] += usage.output_tokens
        if usage.cached_tokens:
            tokens[2][0] += usage.cached_tokens
        if usage.reasoning_tokens:
            tokens[3][0] += usage.reasoning_tokens
        if usage.cost_usd:
            self._m.cost.child(model, task_type)[0] += usage.cost_usd

    def _count_variant(self, variant: tuple[str, str], usage: Usage) -> None:
        if usage.cost_usd:
            experiment, name = self._experiment(variant[0]), self._variant(variant[1])
            self._m.variant_cost.child(experiment, name)[0] += usage.cost_usd
