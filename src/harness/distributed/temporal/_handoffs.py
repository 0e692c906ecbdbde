"""`WorkflowSwitch`: the `AgentSwitch` of a run inside a workflow (handoffs on Temporal).

The loop takes a handoff step in workflow code as it does embedded (`HandoffStep`). The
target is built on the worker by the `harness.hand_over` local activity, which writes
nothing: it answers with the run's new agent (its key: name, metadata with the handoff
counted, the run's labels), its model's name and its tools, or with the refusal the model
reads. The workflow then sits the target on proxies of its own (its model's calls and its
tools' calls are activities, as the first agent's were), and the handoff step is written
in one keyed batch with the run's row naming the target (`WorkflowSink.hand_over`), as the
embedded `StoreSink` commits it. From then on every activity names the target's key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from harness.agent.handoff import HandoffRefused, HandoffTools, Seat
from harness.agent.spec import AgentSpec
from harness.distributed.host import AgentKey, WorkerHost

from ._local import store_call
from ._sink import WorkflowSink

__all__ = ["HAND_OVER", "WorkflowSwitch"]

HAND_OVER: Final = "harness.hand_over"

"""Building the target reads the store at most (an MCP server's tools): retried."""

SeatMaker = Callable[[AgentSpec, Sequence[Mapping[str, Any]]], Seat]
"""Sits an agent on the workflow's proxies, given its tools as described."""


class WorkflowSwitch:
    """The `AgentSwitch` of one run's workflow.

    Args:
        host: The worker's runtime (agents built in memory, handoff tools).
        key: The run's agent now.
        sink: The run's sink: the handoff step is written through it.
        seat: Sits a target on the workflow's model and tool proxies.
        moved: Told the run's new agent once the handoff is written.
    """

    def __init__(
        self,
        host: WorkerHost,
        key: AgentKey,
        *,
        sink: WorkflowSink,
        seat: SeatMaker,
        moved: Callable[[AgentKey], None],
    ) -> None:
        self._host, self._key, self._sink = host, key, sink
        self._seat, self._moved = seat, moved
        self._count = 0
        self._next: tuple[Seat, AgentKey, str] | None = None

    @property
    def count(self) -> int:
        """Handoffs the run made before the one being taken (the worker counts them)."""
        return self._count

    def tools(self, spec: AgentSpec) -> HandoffTools | None:
        """The handoff tools of `spec`."""
        return self._host.handoff_tools(spec)

    async def prepare(self, source: AgentSpec, target: str) -> Seat:
        """The target built on a worker, sat on the workflow's proxies; nothing written."""
        data: dict[str, Any] = await store_call(
            HAND_OVER, {"key": self._key.to_dict(), "target": target}
        )
        refused = data.get("refused")
        if refused is not None:
            raise HandoffRefused(str(refused))
        key = AgentKey.from_dict(data["key"])
        self._count = int(data["count"])
        seat = self._seat(self._host.agent(key), data["tools"])
        self._next = (seat, key, str(data["model"]))
        return seat

    async def commit(self, seat: Seat) -> None:
        """Write the handoff step with the run's row naming the target."""
        prepared = self._next
        assert prepared is not None, "a handoff commits what it prepared"
        assert prepared[0] is seat, "a handoff commits the seat it prepared"
        _, key, model = prepared
        await self._sink.hand_over(agent=key.agent, model=model, metadata=key.metadata)
        self._key, self._next, self._count = key, None, self._count + 1
        self._moved(key)
