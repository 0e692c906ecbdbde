"""The runtime's side of handoffs (`harness.agent.handoff`): the target, and the run's row.

`RunHandoffs` is the `AgentSwitch` of one run executing here. It finds the target by name
in the `AgentCatalog` (registered, `[agents.NAME]`, entry point) and builds its model and
tools with the process's `AgentResources`, before anything is written; the handoff step
then commits with the run's row naming the target: its agent, model and metadata. The
metadata counts the run's handoffs (`handoffs`, for `Limits.max_handoffs` across
takeovers), carries the target's definition when it can travel, and drops the caller's
`overrides`: after a handoff the run executes the target as it is defined, without the
levels (task type, variant, overrides) chosen for the agent it was submitted to
(`AgentCatalog.for_run` reads the count).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.agent.handoff import HandoffRefused, HandoffTools, Seat
from harness.agent.spec import AgentSpec
from harness.errors import ConfigError
from harness.runtime._catalog import HANDOFFS_KEY, AgentCatalog
from harness.runtime.resources import AgentResources
from harness.runtime.runs import agent_metadata
from harness.runtime.sink import StoreSink

__all__ = ["RunHandoffs", "handoff_count"]


def handoff_count(metadata: Mapping[str, Any]) -> int:
    """How many times a run was handed over, from its metadata."""
    count = metadata.get(HANDOFFS_KEY)
    return count if isinstance(count, int) else 0


class RunHandoffs:
    """The `AgentSwitch` of one run executing in this process.

    Args:
        agents: Where targets are found by name.
        resources: Builds a target's model and tools.
        sink: The run's sink; the handoff step commits through it.
        metadata: The run's metadata as stored.
    """

    def __init__(
        self,
        agents: AgentCatalog,
        resources: AgentResources,
        sink: StoreSink,
        metadata: Mapping[str, Any],
    ) -> None:
        self._agents, self._resources, self._sink = agents, resources, sink
        self._metadata = dict(metadata)
        self._count = handoff_count(metadata)

    @property
    def count(self) -> int:
        """Handoffs the run made so far."""
        return self._count

    def tools(self, spec: AgentSpec) -> HandoffTools | None:
        """The handoff tools of `spec` (see `AgentCatalog.handoff_tools`)."""
        return self._agents.handoff_tools(spec)

    async def prepare(self, source: AgentSpec, target: str) -> Seat:
        """The target with its model and tools; see `AgentSwitch.prepare`."""
        limit = source.limits.max_handoffs
        if self._count >= limit:
            raise HandoffRefused(
                f"The handoff to {target} was refused: this run was already handed over "
                f"{self._count} times, its limit (max_handoffs={limit}). Go on with the "
                "task yourself, or answer with what you found and what is left to do."
            )
        try:
            agent = self._agents.get(target)
            if agent is None:
                raise HandoffRefused(
                    f"The handoff to {target} was refused: no agent named {target!r} is "
                    "known where this run executes. Go on with the task yourself, or hand "
                    "over to another agent you may transfer to."
                )
            return Seat(
                spec=agent,
                model=self._resources.model(agent),
                toolset=await self._resources.toolset(agent),
            )
        except ConfigError as exc:
            raise HandoffRefused(
                f"The handoff to {target} was refused: that agent cannot be started here "
                f"({exc}). Go on with the task yourself."
            ) from exc

    async def commit(self, seat: Seat) -> None:
        """Commit the step with the run's row naming `seat`'s agent; see `AgentSwitch`."""
        agent = seat.spec
        metadata = {k: v for k, v in self._metadata.items() if k not in ("agent", "overrides")}
        portable = agent_metadata(agent)
        if portable is not None:
            metadata["agent"] = portable
        metadata[HANDOFFS_KEY] = self._count + 1
        model = agent.model if isinstance(agent.model, str) else agent.model.name
        await self._sink.hand_over(agent=agent.name, model=model, metadata=metadata)
        self._metadata, self._count = metadata, self._count + 1
