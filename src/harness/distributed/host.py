"""What a distributed backend needs from the runtime, as protocols (no engine imported here).

The runtime (`harness.runtime._temporal`) implements `WorkerHost`; the Temporal workflow and
activities reach the store, the agents, their models and tools only through it, so that this
layer never imports the runtime.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.agent.handoff import HandoffTools
from harness.agent.spec import AgentSpec
from harness.core.events import RunEvent
from harness.core.results import RunResult
from harness.gateway.model import Model
from harness.store.protocol import EventStore
from harness.tools.toolset import Toolset

__all__ = ["AgentKey", "HandoverTarget", "LoadedRun", "WorkerHost"]


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentKey:
    """What names the agent of a run: its row's agent, metadata and labels."""

    agent: str
    """The agent's name (`runs.agent`)."""
    metadata: Mapping[str, Any] = field(default_factory=lambda: {})
    """The run's metadata (its portable definition, overrides, handoffs)."""
    task_type: str | None = None
    """The run's task type."""
    experiment: str | None = None
    """The run's experiment, if any."""
    variant: str | None = None
    """The run's variant of `experiment`."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON, for a workflow's or an activity's payload."""
        return {
            "agent": self.agent,
            "metadata": dict(self.metadata),
            "task_type": self.task_type,
            "experiment": self.experiment,
            "variant": self.variant,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentKey:
        """The key `to_dict` wrote."""
        return cls(
            agent=str(data["agent"]),
            metadata=dict(data.get("metadata") or {}),
            task_type=data.get("task_type"),
            experiment=data.get("experiment"),
            variant=data.get("variant"),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class LoadedRun:
    """A run as a worker starts (or resumes) it: where it left off in the store."""

    run_id: str
    """The run."""
    key: AgentKey
    """Its agent."""
    state: str
    """Its state when loaded (after a queued run was moved to RUNNING)."""
    messages: tuple[Mapping[str, Any], ...]
    """Its conversation, encoded (`core.codec.message_to_dict`)."""
    usage: Mapping[str, Any]
    """What it consumed before (`usage_to_dict`)."""
    context: Mapping[str, Any] | None
    """The `state` of its last `context_compacted` event, if any."""
    elapsed_s: float
    """Seconds it executed before."""
    not_started: tuple[str, ...]
    """Calls that were waiting for approval when it stopped."""
    decisions: Mapping[str, Mapping[str, Any]]
    """Decisions recorded in the store for its calls, by call id (approved, by, reason)."""
    last_seq: int
    """Its last event's seq: the workflow numbers its events from here."""
    tools: tuple[Mapping[str, Any], ...]
    """Its agent's tools, described (name, description, parameters, side_effects, ...)."""
    mail: bool = False
    """Whether its inbox held messages not delivered yet when it was loaded."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON, for the activity's result."""
        return {
            "run_id": self.run_id,
            "key": self.key.to_dict(),
            "state": self.state,
            "messages": list(self.messages),
            "usage": dict(self.usage),
            "context": None if self.context is None else dict(self.context),
            "elapsed_s": self.elapsed_s,
            "not_started": list(self.not_started),
            "decisions": {k: dict(v) for k, v in self.decisions.items()},
            "last_seq": self.last_seq,
            "tools": list(self.tools),
            "mail": self.mail,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LoadedRun:
        """The run `to_dict` wrote."""
        return cls(
            run_id=str(data["run_id"]),
            key=AgentKey.from_dict(data["key"]),
            state=str(data["state"]),
            messages=tuple(data["messages"]),
            usage=dict(data["usage"]),
            context=data.get("context"),
            elapsed_s=float(data["elapsed_s"]),
            not_started=tuple(data["not_started"]),
            decisions=dict(data["decisions"]),
            last_seq=int(data["last_seq"]),
            tools=tuple(data["tools"]),
            mail=bool(data.get("mail")),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelCallPolicy:
    """How long one model call may run on a worker, and how often it is started again.

    A model call's own retries and fallbacks (the profile's) happen inside one attempt; a
    new attempt starts only when the worker running the call died.
    """

    seconds: float = 900.0
    """The call's start-to-close timeout: every try and fallback of its profile fits."""
    attempts: int = 3
    """The most attempts of the call (the profile's `max_retries` + 1)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class HandoverTarget:
    """The agent a run is about to be handed over to, as a worker built it."""

    key: AgentKey
    """The run's agent once handed over: its row's agent, metadata (the handoff counted,
    the caller's overrides dropped) and labels."""
    model: str
    """The name of its model, for the run's row."""
    count: int
    """Handoffs the run made before this one."""
    toolset: Toolset
    """Its tools (without its handoff tools)."""


class WorkerHost(Protocol):
    """The runtime, as a worker of a distributed backend sees it."""

    @property
    def store(self) -> EventStore:
        """The harness store runs are written to."""
        ...

    async def load(self, run_id: str) -> LoadedRun:
        """Read where `run_id` left off; a queued run is moved to RUNNING (no event)."""
        ...

    def agent(self, key: AgentKey) -> AgentSpec:
        """The agent of a run, built in memory (deterministic: workflow code calls it)."""
        ...

    def model(self, agent: AgentSpec) -> Model:
        """The agent's model, resolved from its profile (no I/O until it is called)."""
        ...

    def model_policy(self, agent: AgentSpec) -> ModelCallPolicy:
        """The timeout and attempts of the agent's model calls, from its model profile."""
        ...

    async def toolset(self, agent: AgentSpec) -> Toolset:
        """The agent's tools as the embedded runtime builds them."""
        ...

    def result_data(self, result: RunResult, agent: AgentSpec) -> dict[str, Any]:
        """What the run's row keeps of a result besides its output, usage, termination."""
        ...

    def publish(self, events: Sequence[RunEvent]) -> None:
        """Hand events just written to this process's subscribers (metrics, traces, live)."""
        ...

    def handoff_tools(self, agent: AgentSpec) -> HandoffTools | None:
        """The tools that hand over from `agent`; `None` without `handoffs` (no I/O)."""
        ...

    async def hand_over(self, key: AgentKey, target: str) -> HandoverTarget:
        """Build the agent `target` for a run whose agent is `key`'s; nothing is written.

        Raises:
            HandoffRefused: The run is at its `max_handoffs`, or the target is unknown
                or cannot be built here (the text is the tool message the model reads).
        """
        ...

    async def start_child(
        self, run_id: str, key: AgentKey, agent: str, task: str, call_id: str
    ) -> dict[str, Any]:
        """Create the row of the child run of call `call_id` of `run_id`, unless it exists.

        Returns `{child_run_id, agent, existed, depth, state}`, or `{error, hint}` when a
        limit on children refuses it. The child's workflow is started by the parent's.
        """
        ...

    async def child_ended(self, run_id: str, child_id: str) -> dict[str, Any]:
        """An ended child of `run_id`: what its call answers, and the roll-up.

        Returns its answer (`{text, metadata}`, or `{error, hint}`), `state`,
        `termination`, `usage` (its own and its children's), and `children_usage`: what
        all of `run_id`'s ended children consumed.
        """
        ...

    async def inbox(self, run_id: str) -> list[dict[str, Any]]:
        """The run's messages not delivered yet: `{id, sender, sender_run, content}`."""
        ...

    async def send(
        self, run_id: str, agent: str, to: str, content: str, call_id: str
    ) -> dict[str, Any]:
        """Keep a message of call `call_id` of `run_id` in run `to`'s inbox, once per call.

        Returns `{message_id, engine}` (the engine of `to`, whose workflow the caller
        tells), or `{error, hint}` when it cannot be sent.
        """
        ...
