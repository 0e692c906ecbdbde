"""Turning an agent definition into what a run needs: its model, its tools, its MCP servers."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from weakref import WeakKeyDictionary

from harness.agent.spec import AgentSpec
from harness.errors import ConfigError
from harness.gateway.model import Model, close_model
from harness.gateway.profiles import resolve_model
from harness.gateway.wrappers import Limiter
from harness.runtime.settings import CONFIG_FILE, Settings
from harness.tools import READ_RESULT, Toolset, ToolSpec
from harness.tools.mcp import MCPServerConfig, MCPToolSource

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

    Args:
        settings: Model profiles and MCP servers.
        base_url: Overrides the server address of every model resolved from a string.
    """

    def __init__(self, settings: Settings, *, base_url: str | None = None) -> None:
        self.settings = settings
        self._base_url = base_url
        self._models: dict[str, Model] = {}
        self._limiters: dict[str, Limiter] = {}
        self._toolsets: WeakKeyDictionary[AgentSpec, Toolset] = WeakKeyDictionary()
        self._mcp_sources: dict[str, MCPToolSource] = {}
        self._exits = contextlib.AsyncExitStack()

    async def aclose(self) -> None:
        """Close model clients and stop MCP servers."""
        await self._exits.aclose()
        self._mcp_sources.clear()
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
        """The agent's tools, with `read_result` added; built once per agent object."""
        toolset = self._toolsets.get(agent)
        if toolset is None:
            from harness.tools.builtin import builtin_tool  # the sandbox loads on first use
            from harness.tools.builtin.read_result import read_result_tool

            specs = [
                t
                if isinstance(t, ToolSpec)
                else builtin_tool(
                    t,
                    workspace=agent.workspace,
                    network=agent.network,
                    allow_unsandboxed=agent.allow_unsandboxed,
                    private=private_directories(self.settings.home),
                )
                for t in agent.tools
            ]
            specs += await self._mcp_tools(agent)
            if specs and all(spec.name != READ_RESULT for spec in specs):
                specs.append(read_result_tool())
            toolset = Toolset(specs)
            self._toolsets[agent] = toolset
        return toolset

    async def _mcp_tools(self, agent: AgentSpec) -> list[ToolSpec]:
        """Tools of the agent's MCP servers; each server starts once per `Harness`."""
        specs: list[ToolSpec] = []
        for entry in agent.mcp:
            config = entry if isinstance(entry, MCPServerConfig) else self._mcp_config(entry)
            source = self._mcp_sources.get(config.name)
            if source is None:
                log = self.settings.home / "logs" / f"mcp-{config.name}.log"
                log.parent.mkdir(parents=True, exist_ok=True)
                errlog = self._exits.enter_context(log.open("a", encoding="utf-8"))
                source = await self._exits.enter_async_context(MCPToolSource(config, errlog=errlog))
                self._mcp_sources[config.name] = source
            specs.extend(source.tools)
        return specs

    def _mcp_config(self, name: str) -> MCPServerConfig:
        try:
            return self.settings.mcp_servers[name]
        except KeyError:
            known = ", ".join(sorted(self.settings.mcp_servers)) or "none"
            raise ConfigError(
                f"no MCP server named {name!r} in {self.settings.home / CONFIG_FILE} "
                f"(configured: {known}); add an [mcp.{name}] table with a command or url"
            ) from None
