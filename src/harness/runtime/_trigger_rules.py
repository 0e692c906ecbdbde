"""What a trigger is: the event it waits for, what it matches, the run it starts.

A trigger is checked whole when it is made (`make_trigger`), so that a mistake fails at
registration, never when an event fires it: the event type must be one harness stores,
every key of `match` and every placeholder of `task` must be a field the event type or its
run has, and `state` must name run states.

The fields (`fields_of`): the event's own (`event`, `seq`, and each plain field of its
payload, such as `tool`, `ok` and `result` of `tool_completed`) and its run's (`run_id`,
`agent`, `task`, `task_type`, `state`, `result`, `error`, `termination`, `model`,
`experiment`, `variant`, `parent_run_id`, as the run's row has them when the trigger reads
the event). A name both have is the event's. The task template may also use `{trigger}`.
Matching is equality (a list matches any of its values); there is no expression language.
"""

from __future__ import annotations

import dataclasses
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

from harness.core.events import EVENT_CLASSES, EventType, RunEvent
from harness.core.states import RunState
from harness.errors import ConfigError

if TYPE_CHECKING:
    from harness.store.protocol import RunRecord

__all__ = [
    "MAX_CHAIN",
    "RUN_FIELDS",
    "TRIGGER_NAME_RULE",
    "Trigger",
    "chain_of",
    "fields_of",
    "make_trigger",
]

Scalar = str | int | float | bool | None

RUN_FIELDS: Final = (
    "run_id",
    "agent",
    "task",
    "task_type",
    "state",
    "result",
    "error",
    "termination",
    "model",
    "experiment",
    "variant",
    "parent_run_id",
)
"""The fields of the event's run that `match` and `task` may name."""

MAX_CHAIN: Final = 8
"""Triggered runs in a row at most: a run started by this many triggers, one starting the
next, fires no trigger (even a `reentrant` one)."""

TRIGGER_NAME_RULE: Final = "1 to 64 letters, digits and . _ : - (e.g. review-coder)"
_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_PLAIN = frozenset({"str", "int", "float", "bool", "None"})
_UNSTORED = frozenset({"model_delta"})  # live only, never in the store: nothing to fire on


@dataclass(frozen=True, kw_only=True, slots=True)
class Trigger:
    """Start a run of `start` on every committed event of type `event` that `match` matches.

    Made by `Harness.on` or from a `[[triggers]]` table; each fires once per matching
    event, whichever process sees it, also across crashes (docs/architecture.md).
    """

    name: str
    """Unique among the store's triggers: it keys the trigger's durable cursor and the ids
    of the runs it starts."""
    event: EventType
    """The event type it waits for, e.g. `run_finished`."""
    match: Mapping[str, tuple[Scalar, ...]]
    """Field name → the values that match (any of them); every field must match."""
    start: str
    """The name of the agent it starts."""
    task: str
    """The started run's task: a template whose `{field}`s are filled from the event."""
    task_type: str | None = None
    """The task type of the runs it starts."""
    priority: int = 0
    """Their priority in the queue."""
    reentrant: bool = False
    """Also fire on events of runs this trigger started (directly or down a chain of
    triggers); off, a trigger never feeds itself. `MAX_CHAIN` bounds a chain either way."""

    def fires_on(self, event: RunEvent, run: RunRecord) -> bool:
        """Whether `event` of `run` matches, and firing would not close a loop."""
        if event.type != self.event:
            return False
        chain = chain_of(run)
        if len(chain) >= MAX_CHAIN or (self.name in chain and not self.reentrant):
            return False
        values = _values(event, run, self.match)
        return all(_equal(values[key], wanted) for key, wanted in self.match.items())

    def render(self, event: RunEvent, run: RunRecord) -> str:
        """The task of the run it starts for `event` (`None` values are left empty)."""
        names = _placeholders(self.task)
        values = _values(event, run, names)
        values["trigger"] = self.name
        return self.task.format_map({k: "" if v is None else str(v) for k, v in values.items()})


def chain_of(run: RunRecord) -> tuple[str, ...]:
    """The triggers that led to `run`, oldest first (empty for a run no trigger started)."""
    origin: Any = run.metadata.get("trigger")
    chain: Any = cast(dict[str, Any], origin).get("chain") if isinstance(origin, dict) else None
    return tuple(str(n) for n in cast(list[Any], chain)) if isinstance(chain, list) else ()


def fields_of(event_type: str) -> tuple[str, ...]:
    """The fields a trigger on `event_type` may match on and fill its task with."""
    cls = EVENT_CLASSES[event_type]
    own = [f.name for f in dataclasses.fields(cls) if _plain(str(f.type))]  # type: ignore[arg-type]
    return tuple(dict.fromkeys(["event", "seq", *own, *RUN_FIELDS]))


def make_trigger(
    *,
    name: str,
    event: str,
    match: Mapping[str, Any] | None,
    start: str,
    task: str,
    task_type: str | None = None,
    priority: int = 0,
    reentrant: bool = False,
) -> Trigger:
    """A checked `Trigger`.

    Raises:
        ConfigError: A bad name, an event type harness does not store, a `match` key or
            a `{placeholder}` the event type and its run do not have, a value that is not
            a string, number or boolean (or a list of them), or `state` values that are
            not run states; the message says which and what is allowed.
    """
    if not _NAME.fullmatch(name):
        raise ConfigError(f"trigger name {name!r} is not a label: use {TRIGGER_NAME_RULE}")
    if event not in EVENT_CLASSES or event in _UNSTORED:
        known = ", ".join(sorted(set(EVENT_CLASSES) - _UNSTORED))
        raise ConfigError(f"trigger {name!r}: unknown event type {event!r}; use one of {known}")
    fields = fields_of(event)
    checked = {key: _match_values(name, key, value, fields) for key, value in (match or {}).items()}
    _check_template(name, task, (*fields, "trigger"))
    return Trigger(
        name=name,
        event=cast(EventType, event),
        match=checked,
        start=start,
        task=task,
        task_type=task_type,
        priority=priority,
        reentrant=reentrant,
    )


def _match_values(name: str, key: str, value: Any, fields: Sequence[str]) -> tuple[Scalar, ...]:
    if key not in fields:
        raise ConfigError(
            f"trigger {name!r}: cannot match on {key!r}: not a field of the event or its run "
            f"(fields: {', '.join(fields)})"
        )
    given: Any = value
    many = isinstance(given, list | tuple)
    values: tuple[Any, ...] = tuple(cast(list[Any], given)) if many else (given,)
    bad = [v for v in values if not isinstance(v, Scalar)]
    if not values or bad:
        raise ConfigError(
            f"trigger {name!r}: match {key!r} = {value!r}: give a string, number or boolean, "
            "or a non-empty list of them (matches any)"
        )
    if key == "state":
        unknown = [v for v in values if v not in set(RunState)]
        if unknown:
            states = ", ".join(RunState)
            raise ConfigError(f"trigger {name!r}: {unknown[0]!r} is not a run state ({states})")
    return values


def _check_template(name: str, task: str, fields: Sequence[str]) -> None:
    if not task.strip():
        raise ConfigError(f"trigger {name!r}: give the started run's task (a template)")
    try:
        parts = list(string.Formatter().parse(task))
    except ValueError as exc:
        raise ConfigError(f"trigger {name!r}: task template {task!r}: {exc}") from exc
    for _, field, spec, conversion in parts:
        if field is not None and (spec or conversion or field not in fields):
            shown = field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise ConfigError(
                f"trigger {name!r}: task template: unknown placeholder {{{shown}}}: use plain "
                f"{{name}} placeholders, name one of {', '.join(fields)} (write {{{{ and }}}} "
                "for a brace)"
            )


def _placeholders(task: str) -> list[str]:
    return [field for _, field, _, _ in string.Formatter().parse(task) if field]


def _values(event: RunEvent, run: RunRecord, names: Any) -> dict[str, Any]:
    """The value of each of `names` for `event` of `run` (the event's own field first)."""
    values: dict[str, Any] = {}
    for key in names:
        if key == "event":
            values[key] = event.type
        elif key == "seq":
            values[key] = event.seq
        elif hasattr(event.payload, key):
            values[key] = getattr(event.payload, key)
        elif key in RUN_FIELDS:
            values[key] = getattr(run, key)
    return values


def _equal(actual: Any, wanted: tuple[Scalar, ...]) -> bool:
    if isinstance(actual, RunState):
        actual = str(actual)
    return any(actual == w and isinstance(actual, bool) == isinstance(w, bool) for w in wanted)


def _plain(annotation: str) -> bool:
    return all(part.strip() in _PLAIN for part in annotation.split("|"))
