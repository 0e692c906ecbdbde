"""The runtime's side of the Temporal backend (`[runtime] backend = "temporal"`).

`TemporalHost` is the `WorkerHost` the workflow and activities of
`harness.distributed.temporal` run on: the store, the agents of the `Harness`, their models
and tools. `TemporalBackend` is what the `Harness` verbs delegate to for runs on Temporal:
start a run's workflow, pause, resume, cancel, deliver decisions; and, when the `Harness`
executes runs, a Temporal worker in this process.

Importing this module loads no temporalio: the engine is imported when a backend opens, so
`import harness.runtime` stays free of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.agent._agent_tool import tool_agent
from harness.agent.handoff import HandoffTools
from harness.agent.spec import AgentSpec
from harness.core.codec import message_to_dict, usage_to_dict
from harness.core.events import RunEvent
from harness.core.results import RunResult
from harness.core.states import TEMPORAL_OWNER, TERMINAL_STATES, RunState
from harness.core.usage import Usage
from harness.distributed.host import AgentKey, HandoverTarget, LoadedRun, ModelCallPolicy
from harness.errors import ConfigError, RunError, StoreConflict, ToolError
from harness.gateway.model import Model
from harness.gateway.profiles import resolve_profile
from harness.runtime._catalog import AgentCatalog
from harness.runtime._handoffs import handed_metadata, handoff_count, model_name, prepare_seat
from harness.runtime.bus import EventBus
from harness.runtime.child_limits import ChildLimits
from harness.runtime.children import ChildOf, check_child_limits, child_answer, child_run_id
from harness.runtime.executor import left_off
from harness.runtime.resources import AgentResources
from harness.runtime.runs import result_data
from harness.runtime.runtime_settings import RuntimeSettings
from harness.store.protocol import EventStore, RunRecord
from harness.tools.spec import ToolSpec
from harness.tools.toolset import Toolset

if TYPE_CHECKING:
    from harness.distributed.temporal.client import RunClient, TLSFiles
    from harness.distributed.temporal.worker import RunWorker
    from harness.runtime.harness import Harness

__all__ = [
    "TemporalBackend",
    "TemporalChildren",
    "TemporalHost",
    "TemporalOptions",
    "is_temporal",
]

_log = logging.getLogger(__name__)


_RELAY_POLL_S = 0.5
"""How often a Temporal worker looks for controls of Temporal runs without a notice (SQLite
has none; PostgreSQL's NOTIFY wakes it at once)."""

_LONGEST_RETRY_WAIT_S = 60.0
"""The longest the gateway waits between two tries (`Retrying.max_retry_after_s`)."""


def is_temporal(record: RunRecord) -> bool:
    """Whether the run executes on Temporal (`runs.engine`, migration 14)."""
    return record.engine == "temporal"


@dataclass(frozen=True, kw_only=True, slots=True)
class TemporalOptions:
    """Where runs on Temporal go (`[runtime]` of harness.toml)."""

    address: str = "127.0.0.1:7233"
    """The Temporal frontend, `host:port`."""
    namespace: str = "default"
    """The namespace the workflows live in."""
    task_queue: str = "harness"
    """The task queue of the workers."""
    tls: bool = False
    """Connect with TLS (a real cluster)."""
    tls_ca: str | None = None
    """A PEM file: the CA of the server's certificate (else the system's roots)."""
    tls_cert: str | None = None
    """A PEM file: the client's certificate (mutual TLS)."""
    tls_key: str | None = None
    """A PEM file: its private key."""
    tls_domain: str | None = None
    """The server name its certificate is checked against."""
    api_key: str | None = None
    """An API key (`HARNESS_TEMPORAL_API_KEY`), never logged."""
    heartbeat_s: float = 5.0
    """The heartbeat timeout of model and tool calls: a dead worker's call is given up after
    this long."""
    history_events: int = 10_000
    """A run's workflow continues as new at a step boundary past this many history events."""

    @classmethod
    def of(cls, runtime: RuntimeSettings) -> TemporalOptions:
        """The options of `[runtime]` (and the heartbeat of HARNESS_TEMPORAL_HEARTBEAT_S)."""
        return cls(
            address=runtime.temporal_address,
            namespace=runtime.namespace,
            task_queue=runtime.task_queue,
            tls=runtime.temporal_tls,
            tls_ca=runtime.temporal_tls_ca,
            tls_cert=runtime.temporal_tls_cert,
            tls_key=runtime.temporal_tls_key,
            tls_domain=runtime.temporal_tls_domain,
            api_key=runtime.temporal_api_key,
            heartbeat_s=float(os.environ.get("HARNESS_TEMPORAL_HEARTBEAT_S") or 5.0),
            history_events=runtime.temporal_history_events,
        )


class TemporalChildren:
    """The rows of child runs on Temporal (their workflows are their parents' children).

    Args:
        harness: Creates a child's row (`Harness.submit`, without starting a workflow).
        limits: Depth and number of children (`[children]`).
    """

    def __init__(self, harness: Harness, limits: ChildLimits) -> None:
        self._harness, self._limits = harness, limits

    async def start(
        self, parent_id: str, agent: AgentSpec | str, task: str, call_id: str
    ) -> dict[str, Any]:
        """Create the child of call `call_id` unless it exists (as `ChildRunner` does).

        Returns `{child_run_id, agent, existed, depth, state}`, or `{error, hint}` when a
        limit refuses it.
        """
        store = self._harness.store
        parent = await store.get_run(parent_id)
        if parent is None:
            raise RunError(f"no run {parent_id} in the store")
        child_id = child_run_id(parent_id, call_id)
        depth = parent.depth + 1
        found = await store.get_run(child_id)
        if found is None:
            started = await store.list_runs(parent_run_id=parent_id, limit=None)
            try:
                check_child_limits(depth, len(started), self._limits)
            except ToolError as refused:
                return {"error": refused.message, "hint": refused.hint}
            link = ChildOf(parent_run_id=parent_id, root_run_id=parent.root, depth=depth)
            try:
                await self._harness.submit(
                    agent, task, run_id=child_id, child_of=link, _workflow=False
                )
            except StoreConflict:  # made by an attempt before this one
                pass
            else:
                name = agent if isinstance(agent, str) else agent.name
                return {
                    "child_run_id": child_id,
                    "agent": name,
                    "existed": False,
                    "depth": depth,
                    "state": RunState.PENDING.value,
                }
            found = await store.get_run(child_id)
            assert found is not None
        return {
            "child_run_id": child_id,
            "agent": found.agent,
            "existed": True,
            "depth": depth,
            "state": str(found.state),
        }

    async def ended(self, parent_id: str, child_id: str) -> dict[str, Any]:
        """The ended child's answer, state and usage, and the parent's roll-up.

        The answer is `{text, metadata}` or `{error, hint}`; `children_usage` is the usage
        of all of the parent's ended children.
        """
        store = self._harness.store
        child = await store.get_run(child_id)
        assert child is not None
        assert child.state in TERMINAL_STATES
        ended = await store.list_runs(parent_run_id=parent_id, state=TERMINAL_STATES, limit=None)
        total = sum((c.total_usage for c in ended), Usage())
        out: dict[str, Any] = {
            "state": str(child.state),
            "termination": child.termination,
            "usage": usage_to_dict(child.total_usage),
            "children_usage": usage_to_dict(total),
        }
        try:
            answer = child_answer(child)
        except ToolError as failed:
            out.update(error=failed.message, hint=failed.hint)
        else:
            out.update(text=answer.text, metadata=dict(answer.metadata))
        return out


class TemporalHost:
    """The `WorkerHost` of a `Harness`: its store, agents, models and tools.

    Args:
        store: The open store.
        agents: The agent catalog of the `Harness`.
        resources: Its models and tool registry.
        bus: Its event bus: events written here are published on it.
        children: Creates and reads child runs (agents used as tools); without it (a
            replayer's host) an agent tool's call fails.
    """

    def __init__(
        self,
        store: EventStore,
        agents: AgentCatalog,
        resources: AgentResources,
        bus: EventBus,
        *,
        children: TemporalChildren | None = None,
    ) -> None:
        self._store, self._agents, self._resources, self._bus = store, agents, resources, bus
        self._children = children
        self._built: dict[str, AgentSpec] = {}

    @property
    def store(self) -> EventStore:
        """The store runs are written to."""
        return self._store

    async def load(self, run_id: str) -> LoadedRun:
        """Where the run left off; a queued run moves to RUNNING (no event, as embedded)."""
        record = await self._store.get_run(run_id)
        if record is None:
            raise RunError(f"no run {run_id} in the store")
        if record.state == RunState.PENDING:
            await self._store.transition(run_id, [RunState.PENDING], RunState.RUNNING)
            record = await self._store.get_run(run_id)
            assert record is not None
        key = _key_of(record)
        agent = self.agent(key)
        toolset = await self.toolset(agent)
        messages, events, decided, unread = await asyncio.gather(
            self._store.messages(run_id),
            self._store.events(run_id),
            self._store.decisions(run_id),
            self._store.inbox(run_id),
        )
        left = left_off(events)
        from harness.distributed.temporal._wire import tool_to_dict

        return LoadedRun(
            run_id=run_id,
            key=key,
            state=str(record.state),
            messages=tuple(message_to_dict(m) for m in messages),
            usage=usage_to_dict(record.usage),
            context=None if left.context is None else left.context.to_dict(),
            elapsed_s=left.elapsed_s,
            not_started=tuple(sorted(left.not_started)),
            decisions={
                d.call_id: {"approved": d.approved, "by": d.by, "reason": d.reason} for d in decided
            },
            last_seq=record.last_seq,
            tools=tuple(tool_to_dict(spec) for spec in toolset),
            mail=bool(unread),
        )

    def agent(self, key: AgentKey) -> AgentSpec:
        """The run's agent, as the embedded executor builds it (kept per key)."""
        cache = json.dumps(key.to_dict(), sort_keys=True, default=str)
        agent = self._built.get(cache)
        if agent is None:
            agent = self._agents.for_run(_record_of(key))
            if agent is None:
                raise ConfigError(
                    f"agent {key.agent!r} is not known to this worker: register it, or define "
                    "it in harness.toml, where `harness worker` runs"
                )
            self._built[cache] = agent
        return agent

    def model(self, agent: AgentSpec) -> Model:
        """The agent's model, resolved from its profile."""
        return self._resources.model(agent)

    def model_policy(self, agent: AgentSpec) -> ModelCallPolicy:
        """The timeout and attempts of the agent's model calls, from its model profile.

        The timeout holds every try of the profile and of each fallback, each try its
        `timeout_s`, with the longest wait the gateway allows between tries; a model given
        as an object (not a profile) gets `ModelCallPolicy`'s defaults.
        """
        if not isinstance(agent.model, str):
            return ModelCallPolicy()
        profiles = self._resources.settings.profiles
        first = resolve_profile(agent.model, profiles)
        chain, names = [first], [*first.fallbacks]
        while names:  # the fallbacks, theirs too, each once (the gateway checked for cycles)
            name = names.pop(0)
            if name in {p.name for p in chain}:
                continue
            fallback = resolve_profile(name, profiles)
            chain.append(fallback)
            names.extend(fallback.fallbacks)
        seconds = sum(
            p.timeout_s * (p.max_retries + 1) + _LONGEST_RETRY_WAIT_S * p.max_retries for p in chain
        )
        return ModelCallPolicy(seconds=seconds + 30.0, attempts=first.max_retries + 1)

    async def toolset(self, agent: AgentSpec) -> Toolset:
        """The agent's tools from the registry."""
        return await self._resources.toolset(agent)

    def result_data(self, result: RunResult, agent: AgentSpec) -> dict[str, Any]:
        """What the run's row keeps of a result besides output, usage and termination."""
        return result_data(result, agent)

    def handoff_tools(self, agent: AgentSpec) -> HandoffTools | None:
        """The tools that hand over from `agent` (see `AgentCatalog.handoff_tools`)."""
        return self._agents.handoff_tools(agent)

    async def hand_over(self, key: AgentKey, target: str) -> HandoverTarget:
        """The target of a handoff, built as the embedded runtime builds it (`RunHandoffs`)."""
        count = handoff_count(key.metadata)
        seat = await prepare_seat(self._agents, self._resources, self.agent(key), target, count)
        handed = AgentKey(
            agent=seat.spec.name,
            metadata=handed_metadata(key.metadata, seat.spec, count),
            task_type=key.task_type,
            experiment=key.experiment,
            variant=key.variant,
        )
        return HandoverTarget(
            key=handed, model=model_name(seat.spec), count=count, toolset=seat.toolset
        )

    async def start_child(
        self, run_id: str, key: AgentKey, agent: str, task: str, call_id: str
    ) -> dict[str, Any]:
        """Create the row of the child run of call `call_id` (see `TemporalChildren.start`).

        `agent` names the agent tool's agent; the run's agent's own tool gives it as
        defined (an `AgentSpec` that is registered nowhere else).
        """
        target: AgentSpec | str = agent
        for spec in self.agent(key).tools:
            found = tool_agent(spec) if isinstance(spec, ToolSpec) else None
            if found is not None and (found if isinstance(found, str) else found.name) == agent:
                target = found
                break
        return await self._host_children().start(run_id, target, task, call_id)

    async def child_ended(self, run_id: str, child_id: str) -> dict[str, Any]:
        """The ended child's answer and usage (see `TemporalChildren.ended`)."""
        return await self._host_children().ended(run_id, child_id)

    def _host_children(self) -> TemporalChildren:
        if self._children is None:
            raise ConfigError("this worker's host runs no child runs (agents used as tools)")
        return self._children

    async def inbox(self, run_id: str) -> list[dict[str, Any]]:
        """The run's messages not delivered yet."""
        return [
            {"id": m.id, "sender": m.sender, "sender_run": m.sender_run, "content": m.content}
            for m in await self._store.inbox(run_id)
        ]

    async def send(
        self, run_id: str, agent: str, to: str, content: str, call_id: str
    ) -> dict[str, Any]:
        """Keep a message in run `to`'s inbox, once per call (as `RunMailbox.send`)."""
        from harness.runtime.inbox import post_message

        try:
            message_id = await post_message(
                self._store, to, content, sender=agent, sender_run=run_id, key=f"{run_id}:{call_id}"
            )
        except (ConfigError, RunError) as exc:
            return {
                "error": f"Not sent: {exc}.",
                "hint": "Send to the id of a run that is still going (e.g. one a message "
                "came from).",
            }
        target = await self._store.get_run(to)
        return {"message_id": message_id, "engine": None if target is None else target.engine}

    def publish(self, events: Sequence[RunEvent]) -> None:
        """Publish events just written, as the embedded sink does once they commit."""
        if events:
            self._bus.publish_batch(list(events))


def _key_of(record: RunRecord) -> AgentKey:
    return AgentKey(
        agent=record.agent,
        metadata=dict(record.metadata),
        task_type=record.task_type,
        experiment=record.experiment,
        variant=record.variant,
    )


def _record_of(key: AgentKey) -> RunRecord:
    """A row with what `AgentCatalog.for_run` reads of one (agent, metadata, labels)."""
    return RunRecord(
        run_id="",
        agent=key.agent,
        state=RunState.RUNNING,
        task=None,
        parent_run_id=None,
        model=None,
        priority=0,
        created_at=0.0,
        updated_at=0.0,
        started_at=None,
        finished_at=None,
        usage=Usage(),
        result=None,
        termination=None,
        error=None,
        owner=TEMPORAL_OWNER,
        lease_expires_at=None,
        metadata=dict(key.metadata),
        last_seq=0,
        task_type=key.task_type,
        experiment=key.experiment,
        variant=key.variant,
        engine="temporal",
    )


class TemporalBackend:
    """The verbs of a `Harness` on Temporal, and its worker when it executes runs.

    The connection is made when first needed (a `Harness` that only reads the store never
    connects), or at `open` for one that executes runs.

    Args:
        options: Where Temporal is.
        host: The runtime's side, for a worker.
        max_concurrent: Model and tool calls this process's worker runs at once.
    """

    def __init__(
        self, options: TemporalOptions, host: TemporalHost, *, max_concurrent: int
    ) -> None:
        self._options, self._host, self._max_concurrent = options, host, max_concurrent
        self._runs: RunClient | None = None
        self._connecting = asyncio.Lock()
        self._worker: RunWorker | None = None
        self._working: asyncio.Task[None] | None = None
        self._relaying: asyncio.Task[None] | None = None

    async def open(self, *, execute: bool) -> None:
        """With `execute`, connect and start a worker of the task queue in this process.

        It also relays the store's controls of Temporal runs to their workflows (`_relay`).

        Raises:
            ConfigError: temporalio is not installed, or the server cannot be reached.
        """
        if not execute:
            return
        runs = await self.runs()
        from harness.distributed.temporal.worker import RunWorker

        self._worker = RunWorker(
            runs.client,
            self._host,
            task_queue=self._options.task_queue,
            max_concurrent_activities=self._max_concurrent,
        )
        self._working = asyncio.create_task(self._worker.run(), name="harness-temporal-worker")
        self._relaying = asyncio.create_task(self._relay(), name="harness-temporal-relay")

    async def _relay(self) -> None:
        """Tell the workflows of Temporal runs what the store was asked for them.

        A message kept for a Temporal run by a process that has no Temporal client (an
        embedded run's `send_message`, for instance) queues a `mail` control, as for any
        run; Temporal runs have no owner to take it, so the workers of the task queue take
        them (each control goes to one taker) and signal `mail`, which wakes a run that
        waits for a message. Decisions reached their workflow when they were made (only a
        Harness on Temporal can make them): their controls are taken so they do not pile up.
        A signal lost with a dying worker leaves the message in the inbox, read at the run's
        next step boundary or when its wait ends.
        """
        store, seen = self._host.store, 0
        while True:
            try:
                controls = await store.take_controls(engine="temporal")
                mailed = dict.fromkeys(c.run_id for c in controls if c.kind == "mail")
                if mailed:
                    runs = await self.runs()
                    for run_id in mailed:
                        with contextlib.suppress(Exception):  # it ended: nothing to wake
                            await runs.mail(run_id)
            except Exception:
                _log.exception("relaying controls to Temporal runs failed; trying again")
            seen = await store.wait_for_notice("controls", seen, _RELAY_POLL_S)

    async def runs(self) -> RunClient:
        """The workflow verbs, connected on first use.

        Raises:
            ConfigError: temporalio is not installed, or the server cannot be reached.
        """
        async with self._connecting:
            if self._runs is None:
                self._runs = await _connect(self._options)
        return self._runs

    async def start(self, run_id: str) -> None:
        """Start the run's workflow."""
        await (await self.runs()).start(run_id)

    async def pause(self, run_id: str) -> None:
        """Pause at the next step boundary."""
        await (await self.runs()).pause(run_id)

    async def resume(self, run_id: str) -> None:
        """Continue a paused run (the workflow writes `run_resumed`)."""
        await (await self.runs()).resume(run_id)

    async def cancel(self, run_id: str, *, by: str, reason: str | None) -> None:
        """Cancel the run's workflow; its model or tool call in flight stops."""
        await (await self.runs()).cancel(run_id, by=by, reason=reason)

    async def mail(self, run_id: str) -> None:
        """Tell the run's workflow that its inbox holds a message."""
        await (await self.runs()).mail(run_id)

    async def decide(
        self, run_id: str, call_id: str, *, approved: bool, by: str, reason: str | None
    ) -> None:
        """Deliver a recorded decision to the run's workflow."""
        runs = await self.runs()
        await runs.decide(run_id, call_id, approved=approved, by=by, reason=reason)

    async def aclose(self) -> None:
        """Stop this process's worker, if any (its runs go on on other workers)."""
        if self._relaying is not None:
            self._relaying.cancel()
            with contextlib.suppress(BaseException):
                await self._relaying
            self._relaying = None
        if self._worker is not None and self._working is not None:
            with contextlib.suppress(Exception):
                await self._worker.shutdown()
            with contextlib.suppress(BaseException):
                await self._working
            self._working = self._worker = None


async def _connect(options: TemporalOptions) -> RunClient:
    try:
        from harness.distributed.temporal.client import RunClient, connect
    except ImportError as exc:
        raise ConfigError(
            f'[runtime] backend = "temporal" needs the Temporal SDK ({exc}): '
            "pip install 'harness[temporal]'"
        ) from None
    client = await connect(
        options.address,
        namespace=options.namespace,
        tls=_tls(options),
        api_key=options.api_key,
    )
    return RunClient(
        client,
        task_queue=options.task_queue,
        heartbeat_s=options.heartbeat_s,
        history_events=options.history_events,
    )


def _tls(options: TemporalOptions) -> bool | TLSFiles:
    """`options`' TLS: off, on with the system's roots, or with the files it names (read now).

    Raises:
        ConfigError: A file cannot be read any more (it was when the settings loaded).
    """
    paths = (options.tls_ca, options.tls_cert, options.tls_key)
    if not options.tls or (all(p is None for p in paths) and options.tls_domain is None):
        return options.tls
    read: list[bytes | None] = []
    keys = ("temporal_tls_ca", "temporal_tls_cert", "temporal_tls_key")
    for key, path in zip(keys, paths, strict=True):
        try:
            read.append(None if path is None else Path(path).read_bytes())
        except OSError as exc:
            raise ConfigError(f"[runtime] {key}: cannot read {path}: {exc.strerror}") from None
    ca, cert, key = read
    from harness.distributed.temporal.client import TLSFiles

    return TLSFiles(ca=ca, cert=cert, key=key, domain=options.tls_domain)
