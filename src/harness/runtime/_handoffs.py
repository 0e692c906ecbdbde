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

__all__ = ["RunHandoffs", "handed_metadata", "handoff_count", "model_name", "prepare_seat"]


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
        return await prepare_seat(self._agents, self._resources, source, target, self._count)

    async def commit(self, seat: Seat) -> None:
        """Commit the step with the run's row naming `seat`'s agent; see `AgentSwitch`."""
        agent = seat.spec
        metadata = handed_metadata(self._metadata, agent, self._count)
        await self._sink.hand_over(agent=agent.name, model=model_name(agent), metadata=metadata)
        self._metadata, self._count = metadata, self._count + 1


async def prepare_seat(
    agents: AgentCatalog, resources: AgentResources, source: AgentSpec, target: str, count: int
) -> Seat:
    """The agent `target` with its model and tools, for a run handed over `count` times.

    Raises:
        HandoffRefused: `source`'s `max_handoffs` is reached, or the target is unknown or
            cannot be built here (the text is what the model reads).
    """
    limit = source.limits.max_handoffs
    if count >= limit:
        raise HandoffRefused(
            f"The handoff to {target} was refused: this run was already handed over "
            f"{count} times, its limit (max_handoffs={limit}). Go on with the "
            "task yourself, or answer with what you found and what is left to do."
        )
    try:
        agent = agents.get(target)
        if agent is None:
            raise HandoffRefused(
                f"The handoff to {target} was refused: no agent named {target!r} is "
                "known where this run executes. Go on with the task yourself, or hand "
                "over to another agent you may transfer to."
            )
        return Seat(
            spec=agent, model=resources.model(agent), toolset=await resources.toolset(agent)
        )
    except ConfigError as exc:
        raise HandoffRefused(
            f"The handoff to {target} was refused: that agent cannot be started here "
            f"({exc}). Go on with the task yourself."
        ) from exc


def handed_metadata(metadata: Mapping[str, Any], agent: AgentSpec, count: int) -> dict[str, Any]:
    """A run's metadata once handed over to `agent` (its `count`-th handoff before this one).

    The caller's `overrides` go, the target's portable definition comes, the count grows.
    """
    handed = {k: v for k, v in metadata.items() if k not in ("agent", "overrides")}
    portable = agent_metadata(agent)
    if portable is not None:
        handed["agent"] = portable
    handed[HANDOFFS_KEY] = count + 1
    return handed


def model_name(agent: AgentSpec) -> str:
    """The name of `agent`'s model, as a run's row keeps it."""
    return agent.model if isinstance(agent.model, str) else agent.model.name
