"""Live traces: a subscriber of the event bus that turns committed events into exported spans.

Events reach it after they commit, with the time they happened (`RunEvent.ts`), so spans
carry the real start and end of what they describe whatever the delay. A run this process
submitted is known at once (`begin`); any other run (resumed, taken over after its owner
died, claimed from the queue) is looked up in the store on its first event: its stored
trace context, and the events before that one, which are fed to the builder without
exporting what they finish (that was the earlier process's to export). So a run keeps one
trace, and its run span is exported once, by the process that sees it end.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from harness.core.events import RunCancelled, RunEvent, RunFailed, RunFinished, RunPaused
from harness.observability.context import Sampler, TraceContext
from harness.observability.spans import (
    TRACED_EVENTS,
    SpanData,
    SpanRecord,
    TraceBuilder,
    span_data,
)

__all__ = ["LiveTraces", "SpanExport", "StoredRun", "TraceFollower"]

_log = logging.getLogger(__name__)
RUN_ENDS: Final = frozenset({RunFinished, RunFailed, RunCancelled, RunPaused})
"""Events after which a run is no longer followed here (a paused one is looked up again)."""


class SpanExport:
    """Where finished spans go (`harness.observability.otel.OtelExport`); the base drops them."""

    def export(self, context: TraceContext, run_id: str, spans: Sequence[SpanData]) -> None:
        """Hand over the finished spans of run `run_id`, whose run span is `context`."""

    def export_records(
        self, context: TraceContext, run_id: str, records: Sequence[SpanRecord]
    ) -> None:
        """`export`, the spans as the builder made them; `LiveTraces` hands them over so.

        An export that sends plain data on (`ProcessExport`) takes them as they are.
        """
        self.export(context, run_id, [span_data(record) for record in records])

    def caller(self) -> TraceContext | None:
        """The span active where a run is submitted, if any: the run joins its trace."""
        return None

    def shutdown(self) -> None:
        """Export what is queued, and stop."""

    async def aclose(self) -> None:
        """`shutdown`, in a thread (it may wait for an exporter)."""
        await asyncio.to_thread(self.shutdown)


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredRun:
    """What the store knows of a run the subscriber meets mid-way."""

    context: TraceContext
    """Its trace context, as stored when it was submitted."""
    events: Sequence[RunEvent]
    """Its events so far."""


Lookup = Callable[[str], Awaitable[StoredRun | None]]
_E = TypeVar("_E", bound=SpanExport)
_S = TypeVar("_S")


class _Run(TraceBuilder):
    """A run followed here: its builder, its trace context once known, events held till then.

    One object per run in flight (a burst holds thousands, and each object the collector
    tracks makes its passes longer).
    """

    __slots__ = ("context", "held", "live")

    def __init__(
        self,
        run_id: str,
        context: TraceContext | None,
        *,
        capture_content: bool,
        providers: Mapping[str, str] | None,
    ) -> None:
        super().__init__(run_id, capture_content=capture_content, providers=providers)
        self.context = context
        self.held: list[RunEvent] | None = None if context is not None else []
        self.live = context is not None and context.sampled
        """Its events are fed as they come and its spans exported: the common case."""


class TraceFollower(Generic[_E, _S]):
    """What both trace subscribers share: the runs they follow, and how they are made.

    `LiveTraces` builds each run's spans here; `harness.observability.forward.
    ForwardedTraces` has the export process build them. `_E` is the export, `_S` what
    either keeps per run.

    Args:
        export: Where the spans (or the events to build them from) go.
        lookup: Reads a run's trace context and events from the store.
        capture_content: Put message content in span attributes.
        providers: The provider of each model profile, by name (see `TraceBuilder`).
        sampler: Which new runs are traced; all of them by default.
        max_runs: Runs followed at once; past it the oldest is forgotten (a run executed
            elsewhere, that this process only submitted, never ends here).
    """

    def __init__(
        self,
        export: _E,
        lookup: Lookup,
        *,
        capture_content: bool = False,
        providers: Mapping[str, str] | None = None,
        sampler: Sampler | None = None,
        max_runs: int = 10_000,
    ) -> None:
        self.export: _E = export
        self._lookup = lookup
        self._capture = capture_content
        self._providers = providers
        self._sampler = sampler or Sampler()
        self._max_runs = max_runs
        self._runs: dict[str, _S] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.event_types = TRACED_EVENTS
        """The event classes it reads: the bus passes any other by (`EventBus.subscribe`)."""
        self._configure()

    def _configure(self) -> None:
        """Prepare `export` once the subscriber is made (nothing to do for a `SpanExport`)."""

    def context_for_new_run(self) -> TraceContext:
        """The trace context of a run about to be submitted: in the caller's trace, if any."""
        return self._sampler.new_context(self.export.caller())

    async def aclose(self) -> None:
        """Finish pending look-ups, then export what is queued and stop."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.export.aclose()

    def _look_up(self, resolve: Coroutine[Any, Any, None]) -> None:
        """Run `resolve` (a run's look-up in the store) in a task `aclose` waits for."""
        task = asyncio.get_running_loop().create_task(resolve)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _remember(self, run_id: str, state: _S) -> None:
        self._runs[run_id] = state
        if len(self._runs) > self._max_runs:
            del self._runs[next(iter(self._runs))]


class LiveTraces(TraceFollower[SpanExport, _Run]):
    """Feeds every published event to its run's `TraceBuilder` and exports what ends.

    Its arguments are `TraceFollower`'s; `export` is any `SpanExport`.
    """

    def begin(self, run_id: str, context: TraceContext) -> None:
        """Follow a run submitted here, whose context is known."""
        self._remember(run_id, self._run(run_id, context))

    def __call__(self, event: RunEvent) -> None:
        """The bus subscriber: one event, in order."""
        if event.seq == 0:  # live-only text deltas
            return
        run = self._runs.get(event.run_id)
        if run is None:
            self._learn(event)
        elif run.live and run.context is not None:  # the common case, inline
            records = run.feed_records(event)
            if records:
                self.export.export_records(run.context, event.run_id, records)
            if run.ended or type(event.payload) is RunPaused:
                self._runs.pop(event.run_id, None)  # a resumed run is looked up again
        elif run.held is not None:
            run.held.append(event)
        else:
            self._feed(event.run_id, run, event)

    def batch(self, events: Sequence[RunEvent]) -> None:
        """The bus subscriber for one run's events committed together (a step).

        A run followed and sampled here is looked up once and its spans handed over
        once; any other case takes the events one at a time.
        """
        run = self._runs.get(events[0].run_id)
        if run is None or not run.live or run.context is None:
            for event in events:
                self(event)
            return
        records = run.feed_batch(events)
        if records:
            self.export.export_records(run.context, run.run_id, records)
        if run.ended or type(events[-1].payload) is RunPaused:
            self._runs.pop(run.run_id, None)  # a resumed run is looked up again

    def _feed(self, run_id: str, run: _Run, event: RunEvent) -> None:
        context = run.context
        if context is not None and not context.sampled:
            if type(event.payload) in RUN_ENDS:
                self._runs.pop(run_id, None)
            return
        records = run.feed_records(event)
        if records and context is not None:
            self.export.export_records(context, run_id, records)
        if run.ended or type(event.payload) is RunPaused:
            self._runs.pop(run_id, None)  # a resumed run is looked up again

    def _learn(self, event: RunEvent) -> None:
        run = self._run(event.run_id, None)
        run.held = [event]
        self._remember(event.run_id, run)
        self._look_up(self._resolve(event.run_id, run))

    async def _resolve(self, run_id: str, run: _Run) -> None:
        try:
            stored = await self._lookup(run_id)
        except Exception:
            _log.exception("cannot read run %s for its trace", run_id)
            stored = None
        if stored is None or run.held is None:
            self._runs.pop(run_id, None)
            return
        held, run.held = run.held, None
        run.context = stored.context
        run.live = stored.context.sampled
        first = held[0].seq
        for event in stored.events:
            if event.seq < first:
                run.feed_records(event)  # what an earlier process saw, and exported
        for event in held:
            self._feed(run_id, run, event)

    def _run(self, run_id: str, context: TraceContext | None) -> _Run:
        return _Run(run_id, context, capture_content=self._capture, providers=self._providers)
