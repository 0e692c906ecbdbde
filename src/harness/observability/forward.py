"""Live traces built in the export process: the harness sends each event on as it was stored.

`LiveTraces` builds a run's spans where its events are published: a `TraceBuilder` per run
in flight, its open spans, a record for each span it finishes, all on the event loop of the
process running the runs. When traces go to the export process (`ProcessExport`),
`ForwardedTraces` takes its place and the child does that work: each event is sent on as
the JSON the store wrote (`RunEvent.stored`; encoded here only for an event that did not
come from a store's write), and the child feeds its own builders, made with the same
`capture_content` and providers. All the harness keeps of a run is whether it is traced.

A run it meets mid-way (resumed, taken over after its owner died, claimed from the queue)
is looked up in the store, as `LiveTraces` does: the child is told the stored trace context
and the first event seen here, then sent the earlier events, which bring its builder up to
date without exporting what they finish (that was the earlier process's to export). So a
run keeps one trace, and its run span is exported once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.core.codec import dumps, event_to_dict
from harness.core.events import RunEvent
from harness.observability.context import TraceContext
from harness.observability.live import RUN_ENDS, TraceFollower

if TYPE_CHECKING:
    from harness.observability.export_process import ProcessExport

__all__ = ["ForwardedTraces"]

_log = logging.getLogger(__name__)
_Held = list[RunEvent]


class ForwardedTraces(TraceFollower["ProcessExport", "TraceContext | bool | _Held"]):
    """Sends every published event of a traced run to the export process (see the module).

    Its arguments are `TraceFollower`'s; `export` is the export process, whose builders
    are configured here. What it keeps of a run: its context while nothing was sent yet;
    `True` once the child follows it; `False` when it is not sampled; its events, held while
    the store is asked for its trace context.
    """

    export: ProcessExport

    def _configure(self) -> None:
        """Tell the export process how its builders read events (its first line)."""
        self.export.configure(capture_content=self._capture, providers=self._providers)

    def begin(self, run_id: str, context: TraceContext) -> None:
        """Follow a run submitted here, whose context is known.

        The child is told with the run's first events (one line less to queue per run).
        """
        self._remember(run_id, context if context.sampled else False)

    def __call__(self, event: RunEvent) -> None:
        """The bus subscriber: one event, in order."""
        if event.seq == 0:  # live-only text deltas
            return
        run_id = event.run_id
        state = self._runs.get(run_id)
        if state is True:
            self.export.events((_text(event),))
        elif state is None:
            self._learn(event)
            return
        elif isinstance(state, list):
            state.append(event)
            return
        elif state is not False:  # its context: the run's first event
            self.export.begin(run_id, state, 1, (_text(event),))
            self._runs[run_id] = True
        if type(event.payload) in RUN_ENDS:
            self._runs.pop(run_id, None)

    def batch(self, events: Sequence[RunEvent]) -> None:
        """The bus subscriber for one run's events committed together (a step).

        A run's end (finished, failed, cancelled, paused) is the last event of its step.
        """
        last = events[-1]
        run_id = last.run_id
        state = self._runs.get(run_id)
        if state is True or type(state) is TraceContext:
            stored = [event.stored for event in events]
            if None in stored:
                stored = [_text(event) for event in events]
            if state is True:
                self.export.events(stored)  # pyright: ignore[reportArgumentType]
            else:
                self.export.begin(run_id, state, 1, stored)  # pyright: ignore[reportArgumentType]
                self._runs[run_id] = True
            if type(last.payload) in RUN_ENDS:
                self._runs.pop(run_id, None)  # a resumed run is looked up again
            return
        for event in events:
            self(event)

    def _learn(self, event: RunEvent) -> None:
        held = [event]
        self._remember(event.run_id, held)
        self._look_up(self._resolve(event.run_id, held))

    async def _resolve(self, run_id: str, held: _Held) -> None:
        try:
            stored = await self._lookup(run_id)
        except Exception:
            _log.exception("cannot read run %s for its trace", run_id)
            stored = None
        if self._runs.get(run_id) is not held:
            return  # forgotten meanwhile
        if stored is None:
            self._runs.pop(run_id, None)
            return
        if not stored.context.sampled:
            self._runs[run_id] = False
            if any(type(event.payload) in RUN_ENDS for event in held):
                self._runs.pop(run_id, None)
            return
        first = held[0].seq
        earlier = [_text(e) for e in stored.events if e.seq < first]
        self.export.begin(run_id, stored.context, first, earlier + [_text(e) for e in held])
        if any(type(event.payload) in RUN_ENDS for event in held):
            self._runs.pop(run_id, None)
        else:
            self._runs[run_id] = True


def _text(event: RunEvent) -> str:
    """An event's JSON as the store wrote it; encoded here for one that came from elsewhere."""
    return event.stored or dumps(event_to_dict(event))
