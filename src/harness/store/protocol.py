"""The `EventStore` protocol and the records it reads and writes.

The store is the source of truth of every run: its row (state, usage, result, lease), its
timeline of events (numbered from 1 without gaps), its messages, large tool results (blobs),
the audit trail and the control requests other processes send to the run's owner.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final, Literal, Protocol

from harness.core.events import EventPayload, EventType, RunEvent
from harness.core.messages import Message
from harness.core.results import RunResult, TerminationReason
from harness.core.states import CLAIMABLE_STATES, RUN_STATES, TERMINAL_STATES, RunState
from harness.core.usage import Usage

__all__ = [
    "CLAIMABLE_STATES",
    "RUN_STATES",
    "TERMINAL_STATES",
    "Channel",
    "Control",
    "ControlKind",
    "Decision",
    "EventStore",
    "ExperimentStop",
    "FeedEntry",
    "FeedPage",
    "FeedPosition",
    "InboxMessage",
    "MessageTokens",
    "NewEvent",
    "NewMail",
    "NewRun",
    "RunRecord",
    "RunUpdate",
    "StepWrite",
]

ControlKind = Literal["pause", "resume", "cancel", "approve", "deny", "mail"]
"""Requests that any process may send to the owner of a run (`mail`: its inbox has a new
message)."""

Channel = Literal["controls", "events"]
"""News a store announces to other processes: `controls` (a control was sent to a run's
owner) and `events` (a run's events grew). See `EventStore.wait_for_notice`."""


_NO_USAGE: Final = Usage()
"""One zero usage for every record without children (a `Usage` is frozen)."""


def _no_payload() -> Mapping[str, Any]:
    return {}


@dataclass(frozen=True, kw_only=True, slots=True)
class NewRun:
    """A run to create."""

    run_id: str
    """Unique id, e.g. from `new_id("run")`."""
    agent: str
    """Name of the agent that runs it."""
    task: str | None = None
    """The user's task."""
    state: str = RunState.PENDING
    """Initial state."""
    resumed_from: str | None = None
    """The run this one continues, when resumed from a failed or cancelled run."""
    parent_run_id: str | None = None
    """The run whose agent-tool call started this one (a child run), if any."""
    root_run_id: str | None = None
    """The top of a child run's tree (`None` for a run that is no child: its own root)."""
    depth: int = 0
    """How many parents are above it: 0 for a run that is no child."""
    model: str | None = None
    """The model profile or name it uses."""
    priority: int = 0
    """Higher priorities are claimed first."""
    metadata: Mapping[str, Any] = field(default_factory=_no_payload)
    """JSON-compatible data the runtime needs to rebuild the run (limits, options …)."""
    owner: str | None = None
    """Claim the run for this owner as it is created."""
    lease_s: float | None = None
    """Lease length in seconds when `owner` is set."""
    task_type: str | None = None
    """A label that groups runs of one kind of task (`refund`), for cost and metrics."""
    trace_parent: str | None = None
    """The W3C `traceparent` of the run's span: every process that executes the run puts
    its spans in that trace."""
    experiment: str | None = None
    """The A/B experiment the run takes part in (`[experiments.NAME]`), if any."""
    variant: str | None = None
    """The experiment's variant the run was assigned, set with `experiment`."""
    engine: str = "embedded"
    """What executes it: `embedded` (harness's own executors) or `temporal` (a workflow)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunRecord:
    """A run as the store knows it."""

    run_id: str
    """Unique id."""
    agent: str
    """Name of the agent that runs it."""
    state: RunState
    """Where the run is in its lifecycle."""
    task: str | None
    """The user's task."""
    parent_run_id: str | None
    """The run whose agent-tool call started this one, when it is a child run."""
    model: str | None
    """The model profile or name it uses."""
    priority: int
    """Higher priorities are claimed first."""
    created_at: float
    """When it was created, in seconds since the epoch."""
    updated_at: float
    """When its row last changed."""
    started_at: float | None
    """When it first entered RUNNING."""
    finished_at: float | None
    """When it entered a terminal state."""
    usage: Usage
    """What it consumed so far."""
    result: str | None
    """Its final output."""
    termination: TerminationReason | None
    """Why it ended."""
    error: str | None
    """What went wrong, when it failed."""
    owner: str | None
    """The process that holds its lease."""
    lease_expires_at: float | None
    """When the owner's lease runs out unless renewed."""
    metadata: Mapping[str, Any]
    """Runtime data given at creation or by updates."""
    last_seq: int
    """The `seq` of its last event (0 before any)."""
    result_data: Mapping[str, Any] | None = None
    """The parts of its result beyond the output text, as `result_to_dict` writes them:
    `data`, `output_valid`, `output_errors` (structured output) and `detail`; `None`
    before it ends, and for runs stored before this column existed."""
    task_type: str | None = None
    """The label that groups runs of one kind of task, if it was given."""
    previous_owner: str | None = None
    """Set by `claim` only: who held the lease just before this claim (`None` when nobody
    did). A run taken over from a dead process names that process here."""
    trace_parent: str | None = None
    """The W3C `traceparent` of the run's span, given at creation; `None` for runs stored
    before traces existed."""
    experiment: str | None = None
    """The A/B experiment the run takes part in, if any."""
    variant: str | None = None
    """The variant of `experiment` it was assigned."""
    resumed_from: str | None = None
    """The run this one continues (a failed or cancelled run resumed as a new run)."""
    root_run_id: str | None = None
    """The top of its tree, when it is a child run (`None`: it is its own root)."""
    depth: int = 0
    """How many parents are above it (0: no child run)."""
    children_usage: Usage = _NO_USAGE
    """What its child runs (and theirs, all the way down) consumed, as their results came
    back to it; `usage` is its own only. Each token is in exactly one run's `usage`."""
    engine: str = "embedded"
    """What executes it: `embedded`, or `temporal` (a workflow; embedded processes never
    claim, adopt or take it over)."""

    @property
    def root(self) -> str:
        """The id of the top of its tree (its own id when it is no child)."""
        return self.root_run_id or self.run_id

    @property
    def total_usage(self) -> Usage:
        """Its own usage and its children's together: what the whole subtree consumed."""
        return self.usage + self.children_usage


@dataclass(frozen=True, kw_only=True, slots=True)
class RunUpdate:
    """Changes to a run's row; fields left `None` keep their value."""

    state: str | None = None
    """The new state; RUNNING stamps `started_at` once, a terminal state `finished_at`."""
    usage: Usage | None = None
    """The run's total usage so far (not an increment)."""
    result: str | None = None
    """The final output."""
    termination: TerminationReason | None = None
    """Why the run ended."""
    error: str | None = None
    """What went wrong."""
    model: str | None = None
    """The model now in use."""
    agent: str | None = None
    """The agent the run continues under (a handoff)."""
    metadata: Mapping[str, Any] | None = None
    """Replaces the run's metadata."""
    result_data: Mapping[str, Any] | None = None
    """The parts of the result beyond the output text (see `RunRecord.result_data`)."""
    children_usage: Usage | None = None
    """The total usage of the run's children whose results it received (not an increment)."""

    @classmethod
    def finished(cls, result: RunResult, result_data: Mapping[str, Any]) -> RunUpdate:
        """The row of a run that ended with `result`: FAILED on an error, else COMPLETED."""
        failed = result.termination == "error"
        return cls(
            state=RunState.FAILED if failed else RunState.COMPLETED,
            result=result.output,
            usage=result.usage,
            termination=result.termination,
            error=result.error,
            result_data=result_data,
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class NewEvent:
    """An event to append; the store gives it the run's next `seq`."""

    payload: EventPayload
    """What happened: an instance of the event type's class."""
    ts: float | None = None
    """When it happened; the store's clock when `None`."""

    @property
    def type(self) -> EventType:
        """The event type (`payload.type`)."""
        return self.payload.type


@dataclass(frozen=True, kw_only=True, slots=True)
class StepWrite:
    """Everything one step of a run writes, committed in one transaction or not at all."""

    run_id: str
    """The run."""
    events: Sequence[NewEvent] = ()
    """Events, numbered in this order after the run's last one."""
    messages: Sequence[Message] = ()
    """Messages, appended in this order to the run's history."""
    blobs: Mapping[str, str] = field(default_factory=lambda: {})
    """Large texts by key (e.g. full tool results); a key written again is replaced."""
    audit: Sequence[Mapping[str, Any]] = ()
    """Audit records of the step's tool calls, kept with it."""
    update: RunUpdate | None = None
    """Changes to the run's row."""
    expect_states: Collection[str] | None = None
    """When set, the run must be in one of these states or nothing is written."""
    owner: str | None = None
    """When set, the run must be leased to this owner or nothing is written (a fence)."""
    key: str | None = None
    """Idempotency key, e.g. `step-3-attempt-1`: a step whose key the run already has
    writes nothing again and returns the events it wrote the first time."""
    delivered: Sequence[int] = ()
    """Ids of messages of the run's inbox that this step delivers: marked delivered with
    it. One delivered before fails the whole step (`StoreConflict`): a message is in a
    run's committed history once at most."""


@dataclass(frozen=True, kw_only=True, slots=True)
class MessageTokens:
    """The size of one stored message, without its text."""

    run_id: str
    """The run."""
    seq: int
    """Its position in the run's history, from 1."""
    role: str
    """`system`, `user`, `assistant` or `tool`."""
    tool_call_id: str | None
    """The call a tool message answers."""
    tokens: int | None
    """Its token count, as the run counted it (`None` when unknown)."""
    tokens_source: str | None
    """`reported` (the provider's count) or `estimated`."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Control:
    """A request sent to a run's owner, e.g. to pause it or to approve a tool call."""

    id: int
    """Unique and increasing: controls are taken in the order they were sent."""
    run_id: str
    """The run it is for."""
    kind: ControlKind
    """What is asked."""
    payload: Mapping[str, Any]
    """Details, e.g. `{"call_id": …, "by": …, "reason": …}` for approvals."""
    created_at: float
    """When it was sent."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Decision:
    """A person's decision on one tool call that waits for approval: one per call, ever."""

    run_id: str
    """The run."""
    call_id: str
    """The tool call decided."""
    approved: bool
    """Whether the call may run."""
    by: str
    """Who decided, e.g. `user:alice`."""
    reason: str | None = None
    """Why, for a denial: the model is told."""
    decided_at: float = 0.0
    """When it was recorded (the store's clock; ignored when deciding)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class NewMail:
    """A message to put in a run's inbox (`EventStore.post_message`)."""

    run_id: str
    """The run it is for."""
    content: str
    """What it says."""
    sender: str = "user"
    """Who sends it: a person (`user`, `alice`), or the agent of the run that sends it."""
    sender_run: str | None = None
    """The run that sends it, when a run does."""
    key: str | None = None
    """Idempotency key (a sending run's id and call id): a second message with the same
    key is not kept; the first one's id is returned."""


@dataclass(frozen=True, kw_only=True, slots=True)
class InboxMessage:
    """A message in a run's inbox."""

    id: int
    """Unique and increasing: a run reads its messages in this order."""
    run_id: str
    """The run it is for."""
    content: str
    """What it says."""
    sender: str
    """Who sent it (see `NewMail.sender`)."""
    sender_run: str | None
    """The run that sent it, when a run did."""
    sent_at: float
    """When it was kept (the store's clock)."""
    delivered_at: float | None = None
    """When the step that delivered it committed; `None` until then."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ExperimentStop:
    """An A/B experiment stopped from the command line: all its traffic goes to `keep`."""

    experiment: str
    """The experiment's name (`[experiments.NAME]`)."""
    keep: str
    """The variant every new run of the experiment gets."""
    by: str
    """Who stopped it, e.g. `user:alice`."""
    stopped_at: float = 0.0
    """When it was recorded (the store's clock; ignored when stopping)."""


@dataclass(frozen=True, kw_only=True, slots=True, order=True)
class FeedPosition:
    """A place in the feed of every run's events, in the order they committed.

    Positions compare in that order; the feed's start is `FeedPosition()`. What the two
    numbers mean is the store's business (SQLite: `(0, rowid)`; PostgreSQL: the writing
    transaction's id and a number per row).
    """

    tx: int = 0
    """The transaction's part of the position."""
    pos: int = 0
    """The row's part of the position."""

    def before(self) -> FeedPosition:
        """A position after every event before this one, and before this one's event."""
        return FeedPosition(tx=self.tx, pos=self.pos - 1)


@dataclass(frozen=True, kw_only=True, slots=True)
class FeedEntry:
    """One event read from the feed, with its position in it."""

    position: FeedPosition
    """Where the event is in the feed."""
    event: RunEvent
    """The event."""
    run: RunRecord
    """The event's run, as its row is when the feed is read (read with the event)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class FeedPage:
    """What one read of the feed found."""

    entries: tuple[FeedEntry, ...]
    """The events of the types asked for, in feed order."""
    end: FeedPosition
    """Where the next read starts: every event of those types up to here is in `entries`."""


class EventStore(Protocol):
    """Durable runs, events and messages, shared by every process that opens the same store.

    Every method is a coroutine that never blocks the event loop. Writes that fail raise
    `StoreError` (or its `StoreConflict`) and leave nothing behind.
    """

    async def create_run(
        self, run: NewRun, *, events: Sequence[NewEvent] = (), messages: Sequence[Message] = ()
    ) -> list[RunEvent]:
        """Create a run with its first events and messages; returns the numbered events.

        Raises:
            StoreConflict: A run with this id exists.
        """
        ...

    async def append(self, step: StepWrite) -> list[RunEvent]:
        """Commit one step; returns its events with their `seq` and `ts`.

        Raises:
            StoreConflict: The run is missing, not in `expect_states`, or not leased to
                `owner`.
            ConfigError: An event type is unknown or a payload is not JSON-compatible.
        """
        ...

    async def transition(
        self,
        run_id: str,
        from_states: Collection[str],
        to_state: str,
        *,
        events: Sequence[NewEvent] = (),
        update: RunUpdate | None = None,
    ) -> list[RunEvent] | None:
        """Move the run to `to_state` only if it is in one of `from_states` (compare and set).

        Returns:
            The numbered `events`, or `None` when the run was not in `from_states` (then
            nothing was written).
        """
        ...

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or `None` when there is no such run."""
        ...

    async def list_runs(
        self,
        *,
        state: str | Collection[str] | None = None,
        agent: str | None = None,
        owner: str | None = None,
        since: float | None = None,
        until: float | None = None,
        task_type: str | None = None,
        limit: int | None = 100,
        experiment: str | None = None,
        before: tuple[float, str] | None = None,
        parent_run_id: str | None = None,
        root_run_id: str | None = None,
    ) -> list[RunRecord]:
        """Runs created in `[since, until)` that match every filter given, newest first.

        `parent_run_id` selects the children of a run, `root_run_id` every run below a
        root (not the root itself).

        `limit=None` returns every match. `before` is a page's end: `(created_at, run_id)`
        of the last run of the page before, whose successors (in this order) are listed.
        """
        ...

    async def count_runs(self, state: str | Collection[str]) -> int:
        """How many runs are in `state`, or in one of several states."""
        ...

    async def events(
        self, run_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> list[RunEvent]:
        """The run's events with `seq > after_seq`, in order."""
        ...

    async def events_of_runs(
        self, run_ids: Collection[str], *, types: Collection[EventType] | None = None
    ) -> list[RunEvent]:
        """The events of several runs, only those of `types` when given: by run id, then seq.

        Read in a few batched queries however many runs there are (reports over many runs
        never ask once per run).
        """
        ...

    async def count_events(
        self, run_ids: Collection[str], *, types: Collection[EventType]
    ) -> dict[str, int]:
        """How many events of `types` each of several runs has; runs with none are left out.

        Counted by the database in a few batched queries: no event is read or decoded (the
        API's list of runs shows each run's steps this way).
        """
        ...

    async def messages(self, run_id: str) -> list[Message]:
        """The run's whole message history, in order, exactly as appended."""
        ...

    async def messages_of_runs(self, run_ids: Collection[str]) -> dict[str, list[Message]]:
        """The message histories of several runs, each in order, keyed by run id.

        Every run asked for is a key (`[]` when it has no messages or does not exist).
        Read in a few batched queries however many runs there are: a process that claims
        a batch of runs reads their histories at once, not once per run.
        """
        ...

    async def message_tokens(
        self, run_ids: Collection[str], *, roles: Collection[str] | None = None
    ) -> list[MessageTokens]:
        """The sizes of the messages of several runs (of `roles`, all when `None`).

        Ordered by run and `seq`; the texts are not read.
        """
        ...

    async def put_blob(self, run_id: str, key: str, text: str) -> None:
        """Keep a large text (e.g. a full tool result) under `key`, replacing any before."""
        ...

    async def get_blob(self, run_id: str, key: str) -> str | None:
        """The text kept under `key`, or `None`."""
        ...

    async def record_audit(self, run_id: str, record: Mapping[str, Any]) -> None:
        """Keep one audit record (JSON-compatible) of the run."""
        ...

    async def audit(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """Audit records of one run, or of all runs, in the order they were kept."""
        ...

    async def claim(
        self,
        owner: str,
        *,
        lease_s: float,
        run_ids: Collection[str] | None = None,
        states: Collection[str] = CLAIMABLE_STATES,
        limit: int = 100,
    ) -> list[RunRecord]:
        """Lease runs to `owner`: those in `states` that nobody holds or whose lease expired.

        Runs already leased to `owner` are renewed and returned too. Higher priority and
        older runs come first. Two owners never hold the same run.

        Args:
            owner: Who takes the runs, e.g. `host:pid:start`.
            lease_s: Seconds until the lease expires unless renewed.
            run_ids: Only these runs; any matching run when `None`.
            states: Only runs in these states.
            limit: At most this many runs.
        """
        ...

    async def start_runs(self, owner: str, run_ids: Collection[str]) -> list[str]:
        """Move the runs among `run_ids` that are PENDING and leased to `owner` to RUNNING.

        One write for a claimed batch, where `transition` is one per run: it stamps
        `started_at` (if unset) and `updated_at`, and writes no event. Returns the ids it
        moved, in no particular order; the others (cancelled or taken over since their
        claim, or not PENDING) are left as they are.
        """
        ...

    async def renew(self, owner: str, run_ids: Collection[str], *, lease_s: float) -> list[str]:
        """Extend the leases `owner` holds; returns the ids it still holds (others are lost)."""
        ...

    async def release(self, owner: str, run_ids: Collection[str] | None = None) -> None:
        """Give up the leases `owner` holds on `run_ids` (all of them when `None`)."""
        ...

    async def expired_runs(self) -> list[RunRecord]:
        """Unfinished runs whose owner's lease ran out, or started runs nobody holds."""
        ...

    async def lease_expires_in(self, owner: str) -> float | None:
        """Seconds until the next lease held by an owner other than `owner` runs out.

        Only leases on unfinished runs that have not run out yet count; `None` when there
        is none. A process that takes over runs looks for expired leases then, rather than
        at its next poll only.
        """
        ...

    async def send_control(
        self, run_id: str, kind: ControlKind, payload: Mapping[str, Any] | None = None
    ) -> int:
        """Queue a request for the run's owner; returns its id.

        Raises:
            StoreConflict: There is no such run.
        """
        ...

    async def take_controls(
        self, *, run_id: str | None = None, owner: str | None = None, engine: str | None = None
    ) -> list[Control]:
        """Consume the pending controls of one run, an owner's runs, or an engine's runs.

        `owner`: every run leased to it. `engine`: every run it executes (Temporal runs have
        no owner: a Temporal worker relays theirs).

        Each control is returned exactly once, to one caller, in the order sent.
        """
        ...

    async def decide(self, decision: Decision) -> Decision | None:
        """Record a decision on a tool call unless it has one (compare and set).

        The winning decision also queues its `approve` or `deny` control for the run's
        owner, in the same transaction: a call gets one decision, delivered once.

        Returns:
            `None` when `decision` was recorded; otherwise the earlier decision, which
            stands (and nothing was written).

        Raises:
            StoreConflict: There is no such run.
        """
        ...

    async def decisions(self, run_id: str) -> list[Decision]:
        """The decisions recorded for the run's tool calls, oldest first."""
        ...

    async def post_message(self, mail: NewMail) -> int:
        """Put a message in a run's inbox; returns the message's id.

        The same transaction queues a `mail` control for the run's owner.

        Raises:
            StoreConflict: There is no such run, or it has ended (it reads no more mail).
        """
        ...

    async def inbox(self, run_id: str, *, unread: bool = True) -> list[InboxMessage]:
        """The run's messages in the order they were kept: those not delivered yet, or all."""
        ...

    async def runs_with_mail(self, run_ids: Collection[str]) -> set[str]:
        """Which of `run_ids` have a message in their inbox not delivered yet.

        A few batched statements however many runs: a process that takes over a batch of
        runs reads the inbox only of those that have mail, not once per run.
        """
        ...

    async def stop_experiment(self, stop: ExperimentStop) -> None:
        """Record that an experiment sends all its traffic to `stop.keep` (the last one wins)."""
        ...

    async def experiment_stops(self) -> dict[str, ExperimentStop]:
        """The experiments stopped so far, by name."""
        ...

    async def wait_for_notice(self, channel: Channel, seen: int, timeout_s: float) -> int:
        """Wait until another process announces news on `channel`, or `timeout_s` passed.

        PostgreSQL announces every control sent (`controls`) and every step that wrote
        events (`events`) with LISTEN/NOTIFY; stores without notifications just wait
        `timeout_s`, so callers read the store after each wait either way (polling stays
        the fallback).

        Args:
            channel: `controls` or `events`.
            seen: The count this call returned last time (0 at first): news that came
                since then returns at once, so none is missed between two waits.
            timeout_s: Seconds to wait at most.

        Returns:
            The channel's count of notices now, for the next call's `seen`.
        """
        ...

    async def feed_end(self) -> FeedPosition:
        """The position after every event committed so far."""
        ...

    async def read_feed(
        self, after: FeedPosition, *, types: Collection[EventType], limit: int = 500
    ) -> FeedPage:
        """Events of `types` committed after `after`, each with its run, in commit order.

        The feed of every run's events, for readers that must see each event once
        whichever process wrote it (triggers): an event committed after a read is never
        placed before the `end` that read returned. At most `limit` events come back; the
        read may stop early on a long stretch of other events (`end` says where).
        """
        ...

    async def feed_cursors(self, names: Collection[str] | None = None) -> dict[str, FeedPosition]:
        """The stored positions of the named readers of the feed (absent: not started).

        With `names` left out (`None`): every reader's.
        """
        ...

    async def start_feed_cursors(
        self, positions: Mapping[str, FeedPosition]
    ) -> dict[str, FeedPosition]:
        """Store each cursor not stored yet at its position; returns every one as stored.

        A cursor stored before (by this or another process) keeps its position: the
        first process to start a reader decides where it starts.
        """
        ...

    async def move_feed_cursors(self, positions: Mapping[str, FeedPosition]) -> None:
        """Move each cursor forward to its position (never back; absent ones are created)."""
        ...

    async def schema_version(self) -> int:
        """The version of the store's schema (the last migration applied)."""
        ...

    async def close(self) -> None:
        """Finish pending writes and close every connection."""
        ...

    async def __aenter__(self) -> EventStore: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...
