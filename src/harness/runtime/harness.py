"""`Harness`: the runtime API — submit, wait, cancel, pause, resume, approve, watch.

Every run lives in the store (SQLite under `HARNESS_HOME` by default): its state, events and
messages. A `Harness` executes the runs it can (those of agents it knows), holding a lease on
each that it renews; runs whose owner died are taken over by the next `Harness` on the store.
Other processes steer a run through control requests in the store.
"""

from __future__ import annotations

import contextlib
import dataclasses
import getpass
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from harness.agent.spec import AgentSpec
from harness.core.ids import check_task_type, new_id
from harness.core.messages import Message
from harness.core.results import RunResult
from harness.core.states import TEMPORAL_LEASE_S, TEMPORAL_OWNER, TERMINAL_STATES, RunState
from harness.core.usage import Limits, Usage
from harness.errors import AlreadyDecided, ConfigError, RunError, StoreError
from harness.memory import TokenCounter
from harness.runtime._queue_bound import QueueBound
from harness.runtime.lifecycle import check_transition

_NO_USAGE: Final = Usage()
"""The usage of a run just created: one for every run (a `Usage` is frozen)."""

_FOREVER: Final = contextlib.nullcontext()
"""`Harness.wait`'s context without a timeout: one for every waiter (it keeps no state)."""

if TYPE_CHECKING:
    # What running needs is bound by `_load_runtime` at the first `Harness()`, so that
    # `from harness import Harness` loads none of it (tests/test_import_cost.py).
    import asyncio
    import socket
    from pathlib import Path

    from harness.core.codec import payload_to_dict, result_from_dict, usage_to_dict
    from harness.core.events import (
        ApprovalDecided,
        ApprovalRequested,
        RunCancelled,
        RunEvent,
        RunFailed,
        RunFinished,
        RunResumed,
        RunSubmitted,
    )
    from harness.observability import (
        LiveTraces,
        Sampler,
        SpanExport,
        StoredRun,
        TraceContext,
        TraceSettings,
        capture_content,
        tracing_enabled,
    )
    from harness.observability.forward import ForwardedTraces
    from harness.observability.metrics import MetricsSubscriber
    from harness.runtime._agents_config import Overrides, overrides_of
    from harness.runtime._catalog import AgentCatalog
    from harness.runtime._temporal import TemporalBackend
    from harness.runtime._trigger_rules import Trigger
    from harness.runtime.bus import EventBus
    from harness.runtime.child_limits import ChildLimits
    from harness.runtime.children import ChildOf, ChildRunner, cascade
    from harness.runtime.executor import RunExecutor
    from harness.runtime.experiments import assign_variant
    from harness.runtime.registry import ToolRegistry
    from harness.runtime.resources import AgentResources, private_directories
    from harness.runtime.runs import RunHandle, agent_metadata
    from harness.runtime.settings import Settings, load_settings
    from harness.runtime.sink import StoreSink
    from harness.runtime.triggers import Firing, TriggerEngine
    from harness.store import open_store
    from harness.store.protocol import Decision, EventStore, NewEvent, NewRun, RunRecord, RunUpdate
    from harness.tools import ApprovalHandler, AuditLog, ChildRuns, ToolSpec
    from harness.tools.preflight import check_workspace_tools

__all__ = ["Harness", "already_decided", "stored_context"]


class Harness:
    """Hosts many runs at once, durably, and lets any process steer them.

    Use it as an async context manager: it opens the store, starts executing runs, and on
    exit stops them at once (their leases are released, so another process takes them over).

    Args:
        settings: Configuration; read from `HARNESS_HOME/harness.toml` when omitted.
        store: An open store, or a target for `open_store`; defaults to `HARNESS_STORE`,
            else `[store]` of `harness.toml`, else `HARNESS_HOME/harness.db`.
        agents: Agents this process can execute besides the ones it submits.
        base_url: Overrides the server address of every model resolved from a string.
        approver: Decides tool calls that need approval; by default they wait for
            `approve`/`deny` from any process (e.g. `harness approve RUN CALL`).
        audit: Receives one record per tool call; by default the store keeps them.
        max_concurrent: Runs executing at once in this process.
        max_queue: Pending runs the store may hold before `submit` refuses more.
        model_limits: Runs executing at once per model name.
        lease_s: How long a lease lasts unless renewed.
        execute: Execute runs in this process; `False` only submits and steers.
        adopt: Also execute runs submitted by other processes, and take over runs whose
            owner died; `False` executes only the runs submitted here.
        control_poll_s: How often controls sent by other processes are looked for. On
            PostgreSQL they also arrive at once by LISTEN/NOTIFY; this is the fallback.
        metrics: Keep Prometheus metrics of the runs (`True`, or a `MetricsSubscriber`
            of your own); read them with `await harness.metrics.render()`. Off by
            default: without it prometheus_client is not even imported.
        traces: Where the spans of runs go; by default, per `[observability]` and the
            `OTEL_*` variables (`harness.observability.otel`), or nowhere.
        live_steps: Every run executed here commits its step before each model call (as a
            run followed by `run(on_event=...)` does), so that whoever follows the store
            (`harness serve`'s event streams) sees the model called and a safe tool's result
            while the model thinks, not only once it replies. One more commit per model call.
        child_limits: Depth and number of child runs (agents used as tools); by default
            `[children]` of `harness.toml`.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        store: EventStore | str | None = None,
        agents: tuple[AgentSpec, ...] = (),
        base_url: str | None = None,
        approver: ApprovalHandler | None = None,
        audit: AuditLog | None = None,
        max_concurrent: int = 64,
        max_queue: int = 10_000,
        model_limits: Mapping[str, int] | None = None,
        lease_s: float = 15.0,
        execute: bool = True,
        adopt: bool = True,
        control_poll_s: float = 0.2,
        metrics: bool | MetricsSubscriber = False,
        traces: SpanExport | None = None,
        live_steps: bool = False,
        child_limits: ChildLimits | None = None,
    ) -> None:
        _load_runtime()
        self.settings = settings or load_settings()
        self.bus = EventBus()
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{new_id('h')[-8:]}"
        self._store_target = store if isinstance(store, str) else None
        self._store: EventStore | None = None if isinstance(store, str) else store
        self._owns_store = self._store is None
        self._agents = AgentCatalog(self.settings, agents)
        self._resources = AgentResources(self.settings, base_url=base_url)
        self._approver, self._audit = approver, audit
        self._limits = (max_concurrent, dict(model_limits or {}), lease_s)
        self._queue = QueueBound(max_queue)
        """The bound of waiting runs (`max_queue`), checked at submit."""
        self._execute, self._adopt = execute, adopt
        self._control_poll_s = control_poll_s
        self._live_steps = live_steps
        self._child_limits = child_limits or self.settings.children
        self._executor: RunExecutor | None = None
        self._finished: dict[str, asyncio.Event] = {}
        self.metrics = _metrics(metrics)
        """The run metrics, when kept (`metrics=`); `None` otherwise."""
        self._trace_export = traces
        self._traces: LiveTraces | ForwardedTraces | None = None
        self._trigger_engine: TriggerEngine | None = None
        self._temporal: TemporalBackend | None = None
        """The Temporal backend, when `[runtime] backend = "temporal"`."""

    @property
    def store(self) -> EventStore:
        """The open store."""
        if self._store is None:
            raise ConfigError("the Harness is not open: use `async with Harness() as h:`")
        return self._store

    async def __aenter__(self) -> Harness:
        await self.open()
        return self

    async def __aexit__(
        self, *exc: type[BaseException] | BaseException | TracebackType | None
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Open the store and, unless `execute=False`, start executing runs."""
        self._traces = self._live_traces()  # a tracing mistake fails before the store opens
        if self._store is None:
            env = os.environ.get("HARNESS_STORE")
            target = self._store_target or env or self.settings.store
            self._store = await _open_store(target, self.settings.home)
        self.bus.subscribe(_EndWatch(self._finished))
        if self.metrics is not None:
            self._keep_metrics(self.metrics)
        if self._traces is not None:
            self.bus.subscribe(self._traces)
        if self.settings.runtime.temporal:
            await self._open_temporal()
            if self._execute:  # its runs are workflows: a trigger's run starts one too
                await self._start_triggers()
        elif self._execute:
            max_concurrent, model_limits, lease_s = self._limits
            self._executor = RunExecutor(
                self.store,
                self.bus,
                self._resources,
                owner=self.owner,
                agents=self._agents,
                approver=self._approver,
                audit=self._audit,
                max_concurrent=max_concurrent,
                model_limits=model_limits,
                lease_s=lease_s,
                adopt=self._adopt,
                control_poll_s=self._control_poll_s,
                on_start=self._note_labels if self.metrics is not None else None,
                live_steps=self._live_steps,
                children=self._child_runner,
            )
            self._executor.start()
            await self._start_triggers()

    async def _open_temporal(self) -> None:
        """Connect to Temporal and, when executing, start a worker in this process."""
        from harness.distributed.temporal import require_temporal

        require_temporal()  # settings made in Python skip load_settings' check
        from harness.runtime._temporal import (
            TemporalBackend,
            TemporalChildren,
            TemporalHost,
            TemporalOptions,
        )

        options = TemporalOptions.of(self.settings.runtime)
        host = TemporalHost(
            self.store,
            self._agents,
            self._resources,
            self.bus,
            children=TemporalChildren(self, self.settings.children),
        )
        backend = TemporalBackend(options, host, max_concurrent=self._limits[0])
        await backend.open(execute=self._execute)
        self._temporal = backend

    def _on_temporal(self, record: RunRecord, verb: str) -> TemporalBackend | None:
        """The backend of a run on Temporal; `None` for an embedded run.

        Raises:
            RunError: The run is on Temporal and this `Harness` is not.
        """
        if record.engine != "temporal":
            return None
        if self._temporal is None:
            raise RunError(
                f"cannot {verb} run {record.run_id}: it runs on Temporal; use a Harness whose "
                '[runtime] backend = "temporal" (the same address and namespace)'
            )
        return self._temporal

    def _child_runner(self, record: RunRecord, sink: StoreSink, handle: RunHandle) -> ChildRuns:
        """The `ToolContext.children` of a run about to execute here."""
        return ChildRunner(self, record, sink, handle, self._child_limits)

    def _keep_metrics(self, metrics: MetricsSubscriber) -> None:
        """Count every committed event, and read the gauges from here at each scrape."""
        self.bus.subscribe(metrics)
        metrics.track(
            in_flight=lambda: self._executor.running if self._executor is not None else 0,
            pending=lambda: self.store.count_runs(RunState.PENDING),
        )

    def _note_labels(self, record: RunRecord) -> None:
        """A run this process is about to execute: its labels, from its row."""
        if self.metrics is not None:
            e, v = record.experiment, record.variant
            self.metrics.note_run(
                record.run_id,
                agent=record.agent,
                task_type=record.task_type,
                model=record.model,
                variant=(e, v) if e and v else None,
            )

    async def _new_trace(self, parent_run_id: str | None) -> TraceContext:
        """A new run's trace context: under the run it continues or its parent, else new.

        A run a trigger started continues the trace of the run whose event fired it.
        """
        parent = await self.store.get_run(parent_run_id) if parent_run_id else None
        if parent is not None and parent.trace_parent is not None:
            return TraceContext.new(stored_context(parent))
        return self._traces.context_for_new_run() if self._traces else TraceContext.new()

    def _live_traces(self) -> LiveTraces | ForwardedTraces | None:
        """The bus subscriber that exports traces, when tracing is on (see `traces`).

        Spans exported by the child process are built there too, from the events as stored
        (`ForwardedTraces`); any other export gets them built here (`LiveTraces`).
        """
        observability = self.settings.observability
        export = self._trace_export or _trace_export(observability)
        if export is None:
            return None
        from harness.observability.export_process import ProcessExport

        follow = ForwardedTraces if isinstance(export, ProcessExport) else LiveTraces
        return follow(
            export,  # type: ignore[arg-type]
            self._stored_trace,
            capture_content=capture_content(observability),
            providers={name: p.provider for name, p in self.settings.profiles.items()},
            sampler=Sampler.from_env(os.environ),
        )

    async def aclose(self) -> None:
        """Stop executing (leases are released), close models, MCP servers and the store."""
        if self._trigger_engine is not None:
            await self._trigger_engine.stop()
        if self._executor is not None:
            await self._executor.stop()
            self._executor = None
        if self._traces is not None:
            await self._traces.aclose()  # what is queued is exported before we return
            self._traces = None
        if self._temporal is not None:
            await self._temporal.aclose()
            self._temporal = None
        await self._resources.aclose()
        if self._store is not None and self._owns_store:
            await self._store.close()
            self._store = None

    def register(self, agent: AgentSpec) -> None:
        """Let this process execute runs of `agent` (matched by name)."""
        self._agents.register(agent)

    def on(
        self,
        event_type: str,
        match: Mapping[str, Any] | None = None,
        *,
        start: AgentSpec | str,
        task: str,
        name: str | None = None,
        task_type: str | None = None,
        priority: int = 0,
        reentrant: bool = False,
    ) -> Trigger:
        """Start a run of `start` on every committed event of `event_type` that matches.

        Fires exactly once per matching event, whichever process on the store commits it,
        also across crashes; only on events committed after the trigger's name was first
        seen on the store (a run this `Harness` submits after `on` returns always is: its
        submit stores the new trigger's cursor first). It runs in this process while it
        executes runs (docs/architecture.md, "Triggers").

            h.on("run_finished", {"agent": "coder"}, start=reviewer,
                 task="Review the work of run {run_id}: {result}")

        Args:
            event_type: The event type, e.g. `run_finished`.
            match: Field → value (or list of values, any of which matches), all of which
                must match: the event's fields and its run's (`agent`, `task_type`,
                `state`, ...; see `harness.runtime._trigger_rules`).
            start: The agent to start, or its name.
            task: The started run's task: `{field}`s of the event and its run are filled in.
            name: Unique on the store: it keys the trigger's cursor and its runs' ids;
                by default `AGENT-on-EVENT_TYPE`.
            task_type: The started runs' task type.
            priority: The started runs' priority.
            reentrant: Also fire on events of runs this trigger started.

        Raises:
            ConfigError: Unknown event type, agent, match field or placeholder, a bad
                value, or a name another trigger has; nothing is registered.
        """
        from harness.runtime._trigger_rules import make_trigger

        check_task_type(task_type)
        agent = self._agents.base_for(start, None)
        trigger = make_trigger(
            name=name or f"{agent.name}-on-{event_type}",
            event=event_type,
            match=match,
            start=agent.name,
            task=task,
            task_type=task_type,
            priority=priority,
            reentrant=reentrant,
        )
        if self._adopt and trigger.name in {t.name for t in self.settings.triggers}:
            raise ConfigError(
                f"a trigger named {trigger.name!r} is in harness.toml: give this one another name"
            )
        self._triggers().add(trigger)
        self.register(agent)
        if self._executing:  # open: its cursor is stored at the engine's next read
            self._triggers().start()
        return trigger

    @property
    def _executing(self) -> bool:
        """Whether this process executes runs (embedded, or as a Temporal worker)."""
        return self._executor is not None or (self._temporal is not None and self._execute)

    @property
    def triggers(self) -> tuple[Trigger, ...]:
        """The triggers this process fires: `on`'s, and `[[triggers]]` of harness.toml."""
        return self._trigger_engine.triggers if self._trigger_engine is not None else ()

    def _triggers(self) -> TriggerEngine:
        if self._trigger_engine is None:
            from harness.runtime.triggers import TriggerEngine

            self._trigger_engine = TriggerEngine(lambda: self.store, self._start_triggered)
            self.bus.subscribe(self._trigger_engine.notice)
        return self._trigger_engine

    async def _start_triggers(self) -> None:
        """Fire triggers while executing: `on`'s, and harness.toml's when adopting runs.

        Each new trigger's cursor is stored before this returns: events committed from
        here on fire it, even if this process dies at once.
        """
        if self._adopt and self.settings.triggers:
            engine = self._triggers()
            for trigger in self.settings.triggers:
                if trigger not in engine.triggers:  # added already when opened before
                    engine.add(trigger)
        engine = self._trigger_engine
        if engine is not None and engine.triggers:
            await engine.prepare()
            engine.start()

    async def _start_triggered(self, firing: Firing) -> str:
        """Create the run of one firing, with its `trigger_fired` event."""
        trigger = firing.trigger
        return await self.submit(
            trigger.start,
            firing.task,
            task_type=trigger.task_type,
            priority=trigger.priority,
            _origin=firing,
        )

    @property
    def registry(self) -> ToolRegistry:
        """The tools every agent of this `Harness` picks from, by name, tag or glob."""
        return self._resources.registry

    def register_tool(
        self,
        tool: ToolSpec | Callable[..., Any],
        *,
        tags: tuple[str, ...] = (),
        max_concurrent: int | None = None,
    ) -> ToolSpec:
        """Register a Python tool once for every agent (`ToolRegistry.register`).

        Agents then name it in their `tools` (`"word_count"`), or pick it by tag or glob.

        Raises:
            ToolDefinitionError: Another tool has the name, or the function is no tool.
        """
        return self.registry.register(tool, tags=tags, max_concurrent=max_concurrent)

    def limits_of(self, record: RunRecord) -> Limits | None:
        """The limits `record` executes under, as a worker here would apply them.

        Its agent's limits, with its task type's, its variant's and its explicit overrides
        over them. `None` when this process knows no such agent (nor does the run's
        metadata carry it), or cannot build it (a Python tool that does not import).
        """
        try:
            agent = self._agents.for_run(record)
        except ConfigError:
            return None
        return agent.limits if agent is not None else None

    async def submit(
        self,
        agent: AgentSpec | str | None,
        task: str,
        *,
        priority: int = 0,
        resumed_from: str | None = None,
        history: list[Message] | None = None,
        task_type: str | None = None,
        experiment_key: str | None = None,
        overrides: Overrides | None = None,
        run_id: str | None = None,
        child_of: ChildOf | None = None,
        _origin: Firing | None = None,
        _workflow: bool = True,
    ) -> str:
        """Queue a run of `agent` on `task` and return its id; it starts when there is room.

        The agent that runs is `agent` with, over it, its task type's `[task_types]` table,
        its experiment variant and `overrides`, in that order (docs/configuration.md).

        Args:
            agent: The agent, or the name of one (`[agents.NAME]`, an entry point, or
                registered); `None` takes the agent of `task_type`'s table.
            task: The task.
            priority: Higher priorities are claimed first.
            resumed_from: The run this one continues (a resumed failed run).
            history: The conversation to start from, instead of the system prompt and task.
            task_type: A label for this kind of task (`refund`): kept with the run, it groups
                runs in `harness cost`, metrics and traces (`TASK_TYPE_RULE`).
            experiment_key: What assigns the variant of an experiment whose `key` is
                `"user"` (a user id …): the same key always gets the same variant.
            overrides: Values that win over every level of configuration.
            run_id: The new run's id (a child run's is derived from its parent's call);
                by default a new one.
            child_of: The parent, root and depth of a child run (`runtime/children.py`).
            _origin: Internal: the trigger firing this run comes from (its derived id,
                metadata and `trigger_fired` event, created with the run).

        Raises:
            ConfigError: `task_type` is not a valid label, no agent has the name given, or
                the run's experiment needs an `experiment_key`.
            RunQueueFull: The queue of pending runs is at its bound.
            StoreConflict: A run with `run_id` exists already.
        """
        check_task_type(task_type)
        engine = self._trigger_engine
        if engine is not None and engine.unprepared and self._executing:
            await engine.prepare()  # a trigger added by `on` fires on this run's events
        base = self._agents.base_for(agent, task_type)
        run_id = run_id or (new_id("run") if _origin is None else _origin.run_id)
        variant = await self._variant(base, task_type, run_id, experiment_key, resumed_from)
        agent = self._agents.effective(
            base, task_type=task_type, variant=variant, overrides=overrides
        )
        lease_s = self._limits[2]
        await _check_workspace(agent, self.settings.home, self.registry.check(agent))
        model = agent.model if isinstance(agent.model, str) else agent.model.name
        messages = history or [Message.system(agent.system_prompt), Message.user(task)]
        counter = TokenCounter()
        messages = [counter.counted(m) for m in messages]
        metadata = _run_metadata(agent, overrides, _origin)
        # A run this process can start now never waits in the queue: it skips the bound,
        # and is created RUNNING, leased to us, in a slot held from here on.
        local = self._executor is not None and self._executor.reserve(model)
        temporal = self._temporal is not None and await self._temporal_ready()
        if not local:
            await self._queue.check(lambda: self.store.count_runs(RunState.PENDING))
        self.register(base)
        trace = await self._new_trace(
            resumed_from or (child_of and child_of.parent_run_id) or _source_run(_origin)
        )
        if trace.parent_span_id is not None:
            metadata["trace_caller"] = trace.parent_span_id
        run = NewRun(
            state=RunState.RUNNING if local else RunState.PENDING,
            owner=self.owner if local else TEMPORAL_OWNER if temporal else None,
            lease_s=lease_s if local or not temporal else TEMPORAL_LEASE_S,
            run_id=run_id,
            agent=agent.name,
            task=task,
            resumed_from=resumed_from,
            parent_run_id=child_of.parent_run_id if child_of else None,
            root_run_id=child_of.root_run_id if child_of else None,
            depth=child_of.depth if child_of else 0,
            model=model,
            priority=priority,
            metadata=metadata,
            task_type=task_type,
            trace_parent=trace.traceparent,
            experiment=variant[0] if variant else None,
            variant=variant[1] if variant else None,
            engine="temporal" if temporal else "embedded",
        )
        submitted = NewEvent(
            payload=RunSubmitted(
                agent=agent.name,
                task=task,
                parent_run_id=resumed_from,
                task_type=task_type,
                experiment=run.experiment,
                variant=run.variant,
            )
        )
        events = [submitted] if _origin is None else [submitted, NewEvent(payload=_origin.event)]
        try:
            created = await self.store.create_run(run, events=events, messages=messages)
        except BaseException:
            if local and self._executor is not None:
                self._executor.unreserve(model)
            raise
        if not local:
            self._queue.queued()
        if self._traces is not None:
            self._traces.begin(run_id, trace)
        self._publish(created)
        if self._temporal is not None:
            if _workflow:  # else its parent's workflow starts it, as a child workflow
                await self._start_workflow(run_id)
        elif self._executor is not None:
            self._executor.own.add(run_id)
            if local:  # already leased to us: start it without a trip through the queue
                record = _new_record(created, run)
                self._executor.launch(record, messages)
            else:
                self._executor.wake()
        return run_id

    async def _temporal_ready(self) -> bool:
        """Whether the new run goes to Temporal.

        It is refused before it exists when the server cannot be reached.
        """
        assert self._temporal is not None
        await self._temporal.runs()
        return True

    async def _start_workflow(self, run_id: str) -> None:
        """Start a new run's workflow; a run whose workflow cannot start fails at once."""
        assert self._temporal is not None
        try:
            await self._temporal.start(run_id)
        except Exception as exc:
            event = NewEvent(
                payload=RunFailed(
                    error=str(exc), error_type=type(exc).__name__, termination="error"
                )
            )
            update = RunUpdate(termination="error", error=str(exc))
            with contextlib.suppress(Exception):
                await self.store.transition(
                    run_id, [RunState.PENDING], RunState.FAILED, events=[event], update=update
                )
            raise

    async def _variant(
        self,
        agent: AgentSpec,
        task_type: str | None,
        run_id: str,
        key: str | None,
        resumed_from: str | None,
    ) -> tuple[str, str] | None:
        """The experiment and variant of a new run, if an experiment splits its runs."""
        experiment = self._agents.experiment_for(agent.name, task_type)
        if experiment is None:
            return None
        parent = await self.store.get_run(resumed_from) if resumed_from else None
        if parent is not None and parent.experiment == experiment.name and parent.variant:
            return experiment.name, parent.variant  # a continued run keeps its variant
        stopped = None if experiment.keep else await self.store.experiment_stops()
        stop = stopped.get(experiment.name) if stopped else None
        keep = experiment.keep or (stop.keep if stop is not None else None)
        return experiment.name, assign_variant(experiment, run_id, key, keep=keep)

    async def run(
        self,
        agent: AgentSpec | str | None,
        task: str,
        *,
        stream: bool = False,
        on_event: Callable[[RunEvent], None] | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (the seed's API names it so)
        task_type: str | None = None,
        experiment_key: str | None = None,
        overrides: Overrides | None = None,
    ) -> RunResult:
        """Submit `agent` on `task`, wait for the end, and return the result.

        Args:
            agent: The agent, its name, or `None` for the task type's; see `submit`.
            task: The task.
            task_type: A label for this kind of task; see `submit`.
            experiment_key: What assigns an experiment's variant; see `submit`.
            overrides: Values over every level of configuration; see `submit`.
            stream: Use streaming model responses (`model_delta` events, seq 0).
            on_event: Called with every event of the run once it is committed (streamed
                `model_delta` text at once).
            timeout: Seconds to wait; `None` waits as long as the run takes.
        """
        agent = self._agents.base_for(agent, task_type)
        if stream:
            self.register(agent)
            if self._executor is not None:
                self._executor.streaming[agent.name] += 1  # kept while this call runs
        watcher = _Watcher(on_event) if on_event else None
        follower: asyncio.Task[None] | None = None
        subscription = self.bus.attach(watcher) if watcher else None
        if watcher and self._executor is not None:
            self._executor.watched[agent.name] += 1  # kept while this call runs
        try:
            run_id = await self.submit(
                agent,
                task,
                task_type=task_type,
                experiment_key=experiment_key,
                overrides=overrides,
            )
            if watcher:
                watcher.run_id = run_id
                await watcher.replay(self.store)
                if self._temporal is not None:  # its worker may be another process
                    follower = asyncio.create_task(self._follow(run_id, watcher))
            return await self.wait(run_id, timeout=timeout)
        finally:
            if follower is not None:
                follower.cancel()
            if subscription:
                await subscription.close()
            if stream and self._executor is not None:
                self._executor.streaming[agent.name] -= 1
            if watcher and self._executor is not None:
                self._executor.watched[agent.name] -= 1

    async def _follow(self, run_id: str, watcher: _Watcher) -> None:
        """Hand `watcher` the run's events as the store gets them (a run on Temporal)."""
        async for event in self.events(run_id):
            watcher(event)

    async def wait(
        self,
        run_id: str,
        timeout: float | None = None,  # noqa: ASYNC109 (the seed's API: wait(run_id, timeout))
    ) -> RunResult:
        """Wait until the run ends and return its result.

        Raises:
            TimeoutError: It did not end within `timeout` seconds.
        """
        async with asyncio.timeout(timeout) if timeout is not None else _FOREVER:
            # A future of this waiter's own: giving up (a timeout, a cancel) cancels it alone.
            executor = self._executor
            if executor is not None and (local := executor.result_of(run_id)) is not None:
                try:
                    result = await local
                finally:
                    executor.forget(run_id, local)
                if result is not None:
                    return result
            # Watched before the state is read: an end published in between is not missed.
            finished = self._finished.setdefault(run_id, asyncio.Event())
            try:
                while True:
                    record = await self._record(run_id)
                    if record.state in TERMINAL_STATES:
                        return await self._result(record)
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(0.5):  # runs executed elsewhere are polled
                            await finished.wait()
                    finished.clear()
            finally:
                if self._finished.get(run_id) is finished:
                    del self._finished[run_id]

    async def get(self, run_id: str) -> RunRecord:
        """The run as the store knows it."""
        return await self._record(run_id)

    async def list(
        self,
        *,
        state: str | None = None,
        agent: str | None = None,
        since: float | None = None,
        until: float | None = None,
        task_type: str | None = None,
        limit: int = 100,
    ) -> list[RunRecord]:
        """Runs matching every filter given, newest first."""
        states = RunState(state.upper()) if state else None
        return await self.store.list_runs(
            state=states, agent=agent, since=since, until=until, task_type=task_type, limit=limit
        )

    async def messages(self, run_id: str) -> list[Message]:
        """The run's exact message history, rebuilt from the store."""
        await self._record(run_id)
        return await self.store.messages(run_id)

    async def events(self, run_id: str, after_seq: int = 0) -> AsyncIterator[RunEvent]:
        """The run's events after `after_seq`: stored ones first, then new ones as they come.

        New events are read when the store announces some (PostgreSQL), or every 50 ms.
        Ends after the run's last event.
        """
        seq, seen = after_seq, 0
        while True:
            batch = await self.store.events(run_id, after_seq=seq)
            for event in batch:
                yield event
                seq = event.seq
            if not batch:
                record = await self._record(run_id)
                if record.state in TERMINAL_STATES and record.last_seq <= seq:
                    return
                seen = await self.store.wait_for_notice("events", seen, 0.05)

    async def cancel(
        self, run_id: str, *, reason: str | None = None, by: str | None = None
    ) -> None:
        """Cancel the run: a model call or tool in flight is interrupted; what was done stays.

        `by` says who asked (`user:NAME` of this process by default). The run's child runs
        (agents used as tools) are cancelled too, all the way down.
        """
        by = by or f"user:{getpass.getuser()}"
        record = await self._record(run_id)
        state = record.state
        check_transition(run_id, state, RunState.CANCELLED, verb="cancel")
        temporal = self._on_temporal(record, "cancel")
        if temporal is not None:
            await temporal.cancel(run_id, by=by, reason=reason)
            return
        if state in (RunState.PENDING, RunState.PAUSED):
            moved = await self.store.transition(
                run_id,
                [state],
                RunState.CANCELLED,
                events=[NewEvent(payload=RunCancelled(by=by, reason=reason))],
                update=RunUpdate(termination="cancelled"),
            )
            if moved is not None:
                self._note_labels(record)
                self._publish(moved)
                await cascade(self, run_id, "cancel", by=by)
                return
        await self.store.send_control(run_id, "cancel", {"by": by, "reason": reason})
        await cascade(self, run_id, "cancel", by=by)

    async def pause(self, run_id: str, *, by: str | None = None) -> None:
        """Pause the run at its next step boundary; `by` says who asked, as for `cancel`.

        Its running child runs pause too; a run that waits for children pauses at once.
        """
        record = await self._record(run_id)
        check_transition(run_id, record.state, RunState.PAUSED, verb="pause")
        by = by or f"user:{getpass.getuser()}"
        temporal = self._on_temporal(record, "pause")
        if temporal is not None:
            await temporal.pause(run_id)
            return
        await self.store.send_control(run_id, "pause", {"by": by})
        await cascade(self, run_id, "pause", by=by)

    async def resume(self, run_id: str) -> str:
        """Continue a PAUSED run (same id), or start a new run from a FAILED or CANCELLED one.

        A PAUSED run's paused child runs continue with it.

        Returns:
            The id of the run that continues: the same, or the new one.
        """
        record = await self._record(run_id)
        state = record.state
        if state in (RunState.FAILED, RunState.CANCELLED):
            return await self._continue(record)
        check_transition(run_id, state, RunState.PENDING, verb="resume")
        temporal = self._on_temporal(record, "resume")
        if temporal is not None:
            await temporal.resume(run_id)
            return run_id
        moved = await self.store.transition(
            run_id, [RunState.PAUSED], RunState.PENDING, events=[NewEvent(payload=RunResumed())]
        )
        if moved is None:
            raise RunError(f"cannot resume run {run_id}: it changed state meanwhile")
        self._publish(moved)
        if self._executor is not None:
            self._executor.own.add(run_id)
            self._executor.wake()
        await cascade(self, run_id, "resume", by=None)
        return run_id

    async def approve(self, run_id: str, call_id: str, *, by: str | None = None) -> None:
        """Let a tool call that waits for approval run.

        Raises:
            AlreadyDecided: The call was approved or denied before: that decision stands.
        """
        await self._decide(run_id, call_id, "approve", by=by, reason=None)

    async def deny(
        self, run_id: str, call_id: str, *, reason: str | None = None, by: str | None = None
    ) -> None:
        """Refuse a tool call that waits for approval; the model is told `reason`.

        Raises:
            AlreadyDecided: The call was approved or denied before: that decision stands.
        """
        await self._decide(run_id, call_id, "deny", by=by, reason=reason)

    async def send(
        self, run_id: str, content: str, *, sender: str = "user", key: str | None = None
    ) -> int:
        """Put a message in a run's inbox; the run reads it at its next step boundary.

        The run sees it as a `user` message that names its sender (`[message from
        user]: …`), once, whichever process executes it; a run parked in
        `wait_for_message` wakes for it. From any process.

        Args:
            run_id: The run to send to (any unfinished state: queued, running, waiting,
                paused).
            content: The message: 1 to 20,000 characters.
            sender: Who sends it, as the run is told.
            key: An idempotency key: a second send with the same key keeps nothing and
                returns the first message's id (a client that retries sends once).

        Returns:
            The message's id in the inbox.

        Raises:
            RunError: There is no such run, or it has ended.
            ConfigError: The content is empty or too long, or `sender` is empty.
        """
        from harness.runtime.inbox import post_message

        record = await self.store.get_run(run_id)
        temporal = None if record is None else self._on_temporal(record, "send a message to")
        message_id = await post_message(self.store, run_id, content, sender=sender, key=key)
        if temporal is not None:  # its workflow reads its inbox when told
            await temporal.mail(run_id)
        return message_id

    async def pending_approvals(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """Tool calls waiting for a decision: of one run, or of every waiting run.

        Each is the `approval_requested` payload with its `run_id` and `requested_at` (the
        event's time); the events of every run are read in one query.
        """
        if run_id is not None:
            runs = [await self._record(run_id)]
        else:
            runs = await self.store.list_runs(state=RunState.WAITING_TOOL, limit=None)
        events = await self.store.events_of_runs(
            [r.run_id for r in runs], types=("approval_requested", "approval_decided")
        )
        asked: dict[tuple[str, str], dict[str, Any]] = {}
        for event in events:
            match event.payload:
                case ApprovalRequested(call_id=call_id) as asking:
                    asked[event.run_id, call_id] = {
                        "run_id": event.run_id,
                        **payload_to_dict(asking),
                        "requested_at": event.ts,
                    }
                case ApprovalDecided(call_id=call_id):
                    asked.pop((event.run_id, call_id), None)
                case _:
                    pass
        return list(asked.values())

    async def decision(self, run_id: str, call_id: str) -> Decision | None:
        """The decision recorded for a tool call, or `None` while it has none."""
        decided = await self.store.decisions(run_id)
        return next((d for d in decided if d.call_id == call_id), None)

    async def _decide(
        self, run_id: str, call_id: str, kind: str, *, by: str | None, reason: str | None
    ) -> None:
        """Record the decision (the first one for a call wins) and deliver it to the owner.

        Raises:
            AlreadyDecided: The call has a decision already, which stands.
        """
        record = await self._record(run_id)
        if record.state in TERMINAL_STATES:
            # A decision that ended the run a moment ago is the answer to a second one.
            earlier = await self.decision(run_id, call_id)
            if earlier is not None:
                raise already_decided(earlier)
            raise RunError(f"cannot {kind} call {call_id}: run {run_id} is {record.state}")
        decision = Decision(
            run_id=run_id,
            call_id=call_id,
            approved=kind == "approve",
            by=by or f"user:{getpass.getuser()}",
            reason=reason,
        )
        temporal = self._on_temporal(record, kind)
        earlier = await self.store.decide(decision)
        if earlier is not None:
            raise already_decided(earlier)
        if temporal is not None:
            await temporal.decide(
                run_id, call_id, approved=decision.approved, by=decision.by, reason=reason
            )

    async def _continue(self, record: RunRecord) -> str:
        agent = self._agents.get(record.agent)
        if agent is None:
            raise ConfigError(
                f"cannot resume run {record.run_id}: agent {record.agent!r} is not registered "
                "in this process"
            )
        history = await self.store.messages(record.run_id)
        return await self.submit(
            agent,
            record.task or "",
            resumed_from=record.run_id,
            history=history,
            task_type=record.task_type,
            overrides=overrides_of(record.metadata),
        )

    async def _record(self, run_id: str) -> RunRecord:
        record = await self.store.get_run(run_id)
        if record is None:
            raise RunError(f"no run {run_id} in the store")
        return record

    async def _result(self, record: RunRecord) -> RunResult:
        """The result of an ended run, decoded from the store by the codec.

        Structured output comes back as JSON; when the agent is known and the value was
        valid, it is validated again into the agent's output type (a pydantic model …).
        """
        messages = tuple(await self.store.messages(record.run_id))
        result = dataclasses.replace(result_from_dict(_encoded(record)), messages=messages)
        agent = self._agents.get(record.agent)
        spec = agent.output_spec if agent is not None else None
        if spec is not None and result.output_valid and result.data is not None:
            checked = spec.validate(result.data)
            if checked.ok:
                result = dataclasses.replace(result, data=checked.value)
        return result

    async def _stored_trace(self, run_id: str) -> StoredRun | None:
        """A run's trace context and events, for the traces of a run met mid-way."""
        record = await self.store.get_run(run_id)
        if record is None:
            return None
        return StoredRun(context=stored_context(record), events=await self.store.events(run_id))

    def _publish(self, events: list[RunEvent]) -> None:
        for event in events:
            self.bus.publish(event)


class _EndWatch:
    """Sets the event of a run someone waits for when the run's end is published.

    A `BatchSubscriber`: a committed step's events come in one call, and with no one
    waiting (the common case) that call returns at once, not once per event.
    """

    __slots__ = ("_finished",)

    def __init__(self, finished: dict[str, asyncio.Event]) -> None:
        self._finished = finished

    def __call__(self, event: RunEvent) -> None:
        if self._finished and isinstance(event.payload, RunFinished | RunFailed | RunCancelled):
            finished = self._finished.get(event.run_id)
            if finished is not None:
                finished.set()

    def batch(self, events: Sequence[RunEvent]) -> None:
        if self._finished:
            for event in events:
                self(event)


def _source_run(origin: Firing | None) -> str | None:
    """The run whose event fired the trigger of `origin`, if any."""
    if origin is None:
        return None
    fired: Mapping[str, Any] = origin.metadata.get("trigger") or {}
    source = fired.get("source_run_id")
    return source if isinstance(source, str) else None


def _run_metadata(
    agent: AgentSpec, overrides: Overrides | None, origin: Firing | None
) -> dict[str, Any]:
    """A new run's metadata: its portable agent, overrides, and trigger."""
    portable = agent_metadata(agent)
    metadata: dict[str, Any] = {"agent": portable} if portable else {}
    if overrides is not None:
        metadata["overrides"] = overrides.to_dict()
    if origin is not None:
        metadata.update(origin.metadata)
    return metadata


async def _open_store(target: str | None, home: Path) -> EventStore:
    """Open `target`, or the SQLite store of `home`.

    Raises:
        ConfigError: `home` cannot be written (named, with what to do).
        StoreError: The store cannot be opened.
    """
    if target is not None:
        return await open_store(target)
    try:
        _make_home(home)
        return await open_store(home / "harness.db")
    except (OSError, StoreError) as exc:
        blocked = _read_only(home)
        if blocked is not None:
            where = "" if blocked == home else f" (it would be created in {blocked})"
            raise ConfigError(
                f"HARNESS_HOME {home} is read-only{where}, so the run store cannot be kept "
                "there: make it writable, or point HARNESS_HOME (or HARNESS_STORE) elsewhere"
            ) from exc
        if isinstance(exc, OSError):
            raise StoreError(f"cannot create HARNESS_HOME {home}: {exc.strerror or exc}") from exc
        raise


def _trace_export(settings: TraceSettings) -> SpanExport | None:
    """The OpenTelemetry export when tracing is on; its SDK is not even imported otherwise.

    Raises:
        ConfigError: Tracing is on but the `otel` extra is not installed.
    """
    if not tracing_enabled(settings):
        return None
    try:
        from harness.observability.otel import OtelExport, exporter_from_env, exporter_name
    except ModuleNotFoundError as exc:
        raise ConfigError(
            "traces are configured ([observability] traces or OTEL_TRACES_EXPORTER) but the "
            "OpenTelemetry SDK is not installed: pip install 'harness[otel]'"
        ) from exc
    kind = settings.traces if settings.traces != "none" else None
    if settings.export == "process" and exporter_name(kind).startswith("otlp"):
        from harness.observability.export_process import ProcessExport

        return ProcessExport(kind)
    return OtelExport(exporter_from_env(kind))


def stored_context(record: RunRecord) -> TraceContext:
    """The trace context stored with a run; one derived from its id for older runs."""
    from harness.observability import TraceContext

    if record.trace_parent is None:
        return TraceContext.derived(record.run_id)
    caller = record.metadata.get("trace_caller")
    return TraceContext.parse(
        record.trace_parent, parent_span_id=caller if isinstance(caller, str) else None
    )


def _make_home(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)


def _read_only(home: Path) -> Path | None:
    """`home`, or the directory it would be created in, when that cannot be written."""
    for directory in (home, *home.absolute().parents):
        if directory.exists():
            writable = directory.is_dir() and os.access(directory, os.W_OK)
            return None if writable else directory
    return None


def _metrics(metrics: bool | MetricsSubscriber) -> MetricsSubscriber | None:
    """The subscriber asked for; prometheus_client is imported only when one is."""
    if metrics is False:
        return None
    if metrics is True:
        from harness.observability.metrics import MetricsSubscriber

        return MetricsSubscriber()
    return metrics


def _encoded(record: RunRecord) -> dict[str, Any]:
    """The result of an ended run in the codec's form, from its row."""
    from harness.core.codec import SCHEMA_VERSION

    return {
        **(record.result_data or {}),
        "v": SCHEMA_VERSION,
        "run_id": record.run_id,
        "output": record.result,
        "termination": record.termination,
        "complete": record.termination == "final_answer",
        "usage": usage_to_dict(record.usage),
        "error": record.error,
    }


def already_decided(decision: Decision) -> AlreadyDecided:
    """The error of a decision that lost to `decision`: which one stands, who and when."""
    from datetime import UTC, datetime

    verdict = "approved" if decision.approved else "denied"
    when = datetime.fromtimestamp(decision.decided_at, UTC).isoformat(timespec="milliseconds")
    why = f" ({decision.reason})" if decision.reason and not decision.approved else ""
    return AlreadyDecided(
        f"call {decision.call_id} of run {decision.run_id} is already decided: "
        f"{verdict} by {decision.by} at {when}{why}"
    )


def _new_record(created: list[RunEvent], run: NewRun) -> RunRecord:
    """The record of a run just created RUNNING and leased to us, without reading it back."""
    now = created[-1].ts
    return RunRecord(
        run_id=run.run_id,
        agent=run.agent,
        state=RunState.RUNNING,
        task=run.task,
        parent_run_id=run.parent_run_id,
        resumed_from=run.resumed_from,
        root_run_id=run.root_run_id,
        depth=run.depth,
        model=run.model,
        priority=run.priority,
        created_at=now,
        updated_at=now,
        started_at=now,
        finished_at=None,
        usage=_NO_USAGE,
        result=None,
        termination=None,
        error=None,
        owner=run.owner,
        lease_expires_at=None,
        metadata=run.metadata,
        last_seq=created[-1].seq,
        task_type=run.task_type,
        experiment=run.experiment,
        variant=run.variant,
    )


class _Watcher:
    """Delivers one run's events to a callback: stored ones first, then live, no duplicates."""

    def __init__(self, callback: Callable[[RunEvent], None]) -> None:
        self.callback = callback
        self.run_id: str | None = None
        self._held: list[RunEvent] | None = []  # live events held back until the replay
        self._last = 0

    def __call__(self, event: RunEvent) -> None:
        if self._held is not None:
            self._held.append(event)
        elif event.run_id == self.run_id:
            self._deliver(event)

    async def replay(self, store: EventStore) -> None:
        assert self.run_id is not None
        for event in await store.events(self.run_id):
            self._deliver(event)
        held, self._held = self._held or [], None
        for event in held:
            if event.run_id == self.run_id:
                self._deliver(event)

    def _deliver(self, event: RunEvent) -> None:
        if event.seq == 0 or event.seq > self._last:
            self._last = max(self._last, event.seq)
            self.callback(event)


async def _check_workspace(agent: AgentSpec, home: Path, builtins: frozenset[str]) -> None:
    """Refuse a run whose built-in tools could not use their workspace, before it exists."""
    if builtins:
        workspace = await asyncio.to_thread(
            check_workspace_tools,
            tuple(builtins),
            agent.workspace,
            allow_unsandboxed=agent.allow_unsandboxed,
        )
        if workspace is not None:
            _guard_private(workspace, home)


def _guard_private(workspace: Path, home: Path) -> None:
    """Private directories inside the workspace must be real directories right below it.

    Tools reach them by name, so a command that could rename their parent (or re-point a
    link to them) would get past the guard. The home is made now if missing, so that no
    command can make one first (a `harness.toml` of its own).
    """
    for private in private_directories(home):
        given = private.absolute()
        real = given.resolve()
        if workspace != real and workspace not in (*real.parents, *given.parents):
            continue
        if real == workspace:
            raise ConfigError(
                f"{private} is the workspace {workspace} itself: commands could change "
                "harness's own files there (its store holds approvals and audit). Keep "
                "HARNESS_HOME in ./.harness or outside the workspace"
            )
        if real.parent != workspace or given.is_symlink():
            raise ConfigError(
                f"{private} lies inside the workspace {workspace} other than as a real "
                "directory right below it: commands in the sandbox could move it out of the "
                "tools' guard. Keep HARNESS_HOME (and harness's installation) directly in the "
                "workspace, like ./.harness, or outside it"
            )
        if private == home:
            with contextlib.suppress(OSError):  # a read-only place: no command can write either
                real.mkdir(mode=0o700, exist_ok=True)


def _load_runtime() -> None:
    """Bind what running needs (event loop, executor, store, codec, events) as globals.

    Called by every `Harness()`, before anything else runs: importing this module loads
    none of it, and the methods then find these names as globals at no cost per call (an
    import statement in `submit` would cost microseconds per run).
    """
    global asyncio, socket, payload_to_dict, result_from_dict, usage_to_dict
    global ApprovalDecided, ApprovalRequested, RunCancelled, RunFailed, RunFinished, RunResumed
    global RunSubmitted, LiveTraces, Sampler, StoredRun, TraceContext, capture_content
    global ForwardedTraces
    global tracing_enabled, EventBus, RunExecutor, AgentResources, private_directories
    global agent_metadata, load_settings, open_store, Decision, NewEvent, NewRun, RunRecord
    global check_workspace_tools, overrides_of, AgentCatalog, assign_variant, RunUpdate
    global ChildRunner, cascade
    import asyncio
    import socket

    from harness.core.codec import payload_to_dict, result_from_dict, usage_to_dict
    from harness.core.events import (
        ApprovalDecided,
        ApprovalRequested,
        RunCancelled,
        RunFailed,
        RunFinished,
        RunResumed,
        RunSubmitted,
    )
    from harness.observability import (
        LiveTraces,
        Sampler,
        StoredRun,
        TraceContext,
        capture_content,
        tracing_enabled,
    )
    from harness.observability.forward import ForwardedTraces
    from harness.runtime._agents_config import overrides_of
    from harness.runtime._catalog import AgentCatalog
    from harness.runtime.bus import EventBus
    from harness.runtime.children import ChildRunner, cascade
    from harness.runtime.executor import RunExecutor
    from harness.runtime.experiments import assign_variant
    from harness.runtime.resources import AgentResources, private_directories
    from harness.runtime.runs import agent_metadata
    from harness.runtime.settings import load_settings
    from harness.store import open_store
    from harness.store.protocol import Decision, NewEvent, NewRun, RunRecord, RunUpdate
    from harness.tools.preflight import check_workspace_tools
