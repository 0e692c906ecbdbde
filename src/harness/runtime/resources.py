"""Turning an agent definition into what a run needs: its model, its tools, its MCP servers."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from harness.agent.spec import AgentSpec
from harness.gateway.model import Model, close_model
from harness.gateway.profiles import resolve_model
from harness.gateway.wrappers import Limiter
from harness.runtime.registry import ToolRegistry
from harness.runtime.settings import Settings
from harness.tools import Toolset

__all__ = ["AgentResources", "private_directories"]


def private_directories(home: Path) -> tuple[Path, ...]:
    """What no tool may reach when it lies in a workspace.

    harness's home (its store holds approvals and audit) and the Python installation
    harness runs from (its code runs as the user, outside any sandbox).
    """
    return (home, Path(sys.prefix))


class AgentResources:
    """Models, toolsets and MCP servers of the agents a `Harness` runs, made once each.

    Every model built here shares one concurrency limiter per profile: a profile's
    `concurrency` bounds the requests of all its agents together, whatever their base URL,
    and also when it serves as another profile's fallback.

    Tools come from one `ToolRegistry` (`registry`), shared by every agent.

    Args:
        settings: Model profiles, MCP servers and `[tools.NAME]` tables.
        base_url: Overrides the server address of every model resolved from a string.
    """

    def __init__(self, settings: Settings, *, base_url: str | None = None) -> None:
        self.settings = settings
        self._base_url = base_url
        self._models: dict[str, Model] = {}
        self._limiters: dict[str, Limiter] = {}
        self.registry = ToolRegistry(settings, private=private_directories(settings.home))
        """The tools of every agent: registered once, MCP servers started once."""

    async def aclose(self) -> None:
        """Close model clients and stop MCP servers."""
        await self.registry.aclose()
        for model in self._models.values():
            with contextlib.suppress(Exception):  # one client that fails to close: go on
                await close_model(model)
        self._models.clear()

    def model(self, agent: AgentSpec) -> Model:
        """The agent's model; clients for the same name are shared."""
        if not isinstance(agent.model, str):
            return agent.model
        base_url = agent.base_url or self._base_url
        key = f"{agent.model}@{base_url}"
        model = self._models.get(key)
        if model is None:
            model = resolve_model(
                agent.model, self.settings.profiles, base_url=base_url, limiters=self._limiters
            )
            self._models[key] = model
        return model

    async def toolset(self, agent: AgentSpec) -> Toolset:
        """The agent's tools from the registry, with `read_result` added (built once)."""
        return await self.registry.toolset(agent)
