"""Cost and usage of past runs, read from the store: `harness cost`.

Every run created in a window (from any process: the store is the source) is read with its
events and the sizes of its tool messages, a few hundred runs per query, and summed by
the dimensions asked for: `model` (the model that answered each request), `task-type`,
`agent`, `day` (UTC, of the run's creation) and `variant` (`experiment/variant` of an A/B
experiment), or `tool`.

The `tool` dimension is an attribution (docs/observability.md, "Cost"): a tool's share of
the cost is the tokens of its results in every later model request of the run that
carried them (a context compaction stops carrying what it removed), priced at that
request's input price (its cached-input price for the part the provider served from its
cache, pro rata), with its calls and their time. It answers "which tool makes my
context expensive".

A price that is unknown stays unknown: the line's `usd` is `None`, never 0 (what is known
of it is `usd_priced`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, get_args

from harness.core.states import RunState
from harness.errors import ConfigError
from harness.observability._cost_groups import Groups, Line, RunInfo, TokenCounts

if TYPE_CHECKING:
    # The fold, the event classes and the store load when a report is read, not when
    # `harness --help` lists this command (DIMENSIONS).
    from harness.core.events import RunEvent
    from harness.observability._cost_fold import RunFold
    from harness.store.protocol import EventStore, MessageTokens, RunRecord

__all__ = [
    "DIMENSIONS",
    "CostLine",
    "CostReport",
    "Dimension",
    "TokenCounts",
    "check_dimensions",
    "read_cost",
]

Dimension = Literal["model", "tool", "task-type", "agent", "day", "variant"]
"""What cost lines can be grouped by."""

DIMENSIONS: Final[tuple[Dimension, ...]] = get_args(Dimension)

_BATCH: Final = 200
_PARENT_LEVELS: Final = 8

CostLine = Line
"""One line of a cost report."""


class _HasRun(Protocol):
    @property
    def run_id(self) -> str: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class CostReport:
    """The cost lines of a window of runs, and their total."""

    by: tuple[Dimension, ...]
    """The dimensions of each line's key, as asked."""
    since: float | None
    """Runs created at or after this time (seconds since the epoch); `None`: all."""
    lines: tuple[CostLine, ...]
    """One line per combination of the dimensions' values, the most expensive first."""
    total: CostLine
    """Every run of the window: its requests, tokens and cost (tools not attributed)."""

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-compatible data with stable keys."""
        since = None if self.since is None else _iso(self.since)
        return {
            "by": list(self.by),
            "since": since,
            "lines": [line.to_dict() for line in self.lines],
            "total": self.total.to_dict(),
        }


def check_dimensions(values: Iterable[str]) -> tuple[Dimension, ...]:
    """The dimensions named, in order.

    Raises:
        ConfigError: A name that is no dimension, or one named twice.
    """
    found: list[Dimension] = []
    for value in values:
        if value not in DIMENSIONS:
            raise ConfigError(f"--by: no dimension {value!r}; use {', '.join(DIMENSIONS)}")
        if value in found:
            raise ConfigError(f"--by: {value!r} is named twice")
        found.append(value)
    return tuple(found)


async def read_cost(
    store: EventStore,
    *,
    by: Sequence[Dimension] = (),
    since: float | None = None,
    until: float | None = None,
) -> CostReport:
    """The cost of the runs created in `[since, until)`, grouped `by` the dimensions.

    Reads the runs with one query, then their events and tool messages' sizes a few
    hundred runs per query.
    """
    dims = check_dimensions(by)
    runs = await store.list_runs(since=since, until=until, limit=None)
    groups, total = Groups(dims), Groups(())
    for start in range(0, len(runs), _BATCH):
        for record, fold in await _folds(store, runs[start : start + _BATCH]):
            info = _info(record)
            groups.add(info, fold)
            total.add(info, fold)
    lines = groups.lines()
    empty = Line.empty({})
    return CostReport(by=dims, since=since, lines=lines, total=(total.lines() or (empty,))[0])


async def _folds(store: EventStore, chunk: Sequence[RunRecord]) -> list[tuple[RunRecord, RunFold]]:
    from harness.observability._cost_fold import FOLDED_TYPES, fold_run

    ids = [record.run_id for record in chunk]
    events = _by_run(await store.events_of_runs(ids, types=FOLDED_TYPES))
    messages = _by_run(await store.message_tokens(ids, roles=("tool",)))
    inherited = await _inherited_names(store, chunk, events, messages)
    return [
        (
            record,
            fold_run(
                events.get(record.run_id, []),
                messages.get(record.run_id, []),
                run_model=record.model,
                known_names=inherited,
            ),
        )
        for record in chunk
    ]


async def _inherited_names(
    store: EventStore,
    chunk: Sequence[RunRecord],
    events: Mapping[str, list[RunEvent]],
    messages: Mapping[str, list[MessageTokens]],
) -> dict[str, str]:
    """Tool names of results that resumed runs inherited, from their ancestors' events.

    One query per generation of ancestors, for the whole chunk.
    """
    from harness.core.events import RunSubmitted, payloads
    from harness.observability._cost_fold import tool_names, unnamed_calls

    wanted: set[str] = set()
    parents: set[str] = set()
    for record in chunk:
        missing = unnamed_calls(events.get(record.run_id, []), messages.get(record.run_id, []))
        if missing and record.resumed_from:
            wanted |= missing
            parents.add(record.resumed_from)
    names: dict[str, str] = {}
    for _ in range(_PARENT_LEVELS):
        if not parents or wanted <= names.keys():
            break
        found = await store.events_of_runs(
            sorted(parents), types=("run_submitted", "model_responded", "tool_completed")
        )
        names.update(tool_names(found))
        parents = {
            s.parent_run_id for s in payloads(found, RunSubmitted) if s.parent_run_id is not None
        }
    return names


def _by_run(items: Iterable[_HasRun]) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = {}
    for item in items:
        grouped.setdefault(item.run_id, []).append(item)
    return grouped


def _info(record: RunRecord) -> RunInfo:
    return RunInfo(
        run_id=record.run_id,
        agent=record.agent,
        task_type=record.task_type,
        variant=f"{record.experiment}/{record.variant}" if record.experiment else None,
        day=_day(record.created_at),
        completed=record.state == RunState.COMPLETED,
    )


def _day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).date().isoformat()


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")
