"""`Harness`: the composition root that turns an agent and a task into a run."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from types import TracebackType
from typing import Any
from weakref import WeakKeyDictionary

from harness.agent.loop import AgentLoop
from harness.agent.spec import AgentSpec
from harness.core.events import RunEvent
from harness.core.ids import new_id
from harness.core.messages import Message
from harness.core.results import RunResult
from harness.errors import ConfigError
from harness.gateway.model import Model
from harness.gateway.profiles import resolve_model
from harness.runtime.approvals import ApprovalInbox
from harness.runtime.bus import EventBus, RunRecorder
from harness.runtime.settings import CONFIG_FILE, Settings, load_settings
from harness.tools import (
    READ_RESULT,
    ApprovalHandler,
    AuditLog,
    JsonlAuditLog,
    MemoryResultStore,
    Toolset,
    ToolSpec,
)
from harness.tools.mcp import MCPServerConfig, MCPToolSource

__all__ = ["Harness"]


class Harness:
    """Runs agents: resolves models and tools, numbers events, and fans them out.

    Use it as an async context manager so that model clients it opened are closed.

    Args:
        settings: Configuration; read from `HARNESS_HOME/harness.toml` when omitted.
        base_url: Overrides the server address of every model resolved from a string.
        approver: Decides tool calls that need approval; by default they wait in the
            `HARNESS_HOME/approvals` inbox for `harness approve` or `harness deny`.
        audit: Receives one record per tool call; by default `HARNESS_HOME/audit.jsonl`.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        base_url: str | None = None,
        approver: ApprovalHandler | None = None,
        audit: AuditLog | None = None,
    ) -> None:
        self.settings = settings or load_settings()
        self.bus = EventBus()
        self.approver: ApprovalHandler = approver or ApprovalInbox(self.settings.home)
        self.audit: AuditLog = audit or JsonlAuditLog(self.settings.home / "audit.jsonl")
        self.results = MemoryResultStore()
        self._base_url = base_url
        self._opened: list[Model] = []
        self._runs: dict[str, RunRecorder] = {}
        self._toolsets: WeakKeyDictionary[AgentSpec, Toolset] = WeakKeyDictionary()
        self._mcp_sources: dict[str, MCPToolSource] = {}
        self._exits = contextlib.AsyncExitStack()

    async def __aenter__(self) -> Harness:
        return self

    async def __aexit__(
        self, *exc: type[BaseException] | BaseException | TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the model clients and MCP servers this harness opened."""
        await self._exits.aclose()
        self._mcp_sources.clear()
        for model in self._opened:
            closer: Callable[[], Any] | None = getattr(model, "aclose", None)
            if closer is not None:
                with contextlib.suppress(Exception):
                    await closer()
        self._opened.clear()

    async def run(
        self,
        agent: AgentSpec,
        task: str,
        *,
        stream: bool = False,
        on_event: Callable[[RunEvent], None] | None = None,
    ) -> RunResult:
        """Run `agent` on `task` in this process and return its result.

        Args:
            agent: The agent to run.
            task: The user's task, sent as the first user message.
            stream: Use streaming model responses (text deltas become `model_delta` events).
            on_event: Called with every event of this run, as it happens.
        """
        run_id = new_id("run")
        recorder = RunRecorder(run_id, self.bus)
        self._runs[run_id] = recorder
        unsubscribe = self.bus.subscribe(_only(run_id, on_event)) if on_event else None
        try:
            recorder.emit("run_submitted", {"agent": agent.name, "task": task})
            loop = AgentLoop(
                agent,
                model=self._model(agent),
                toolset=await self._toolset(agent),
                sink=recorder,
                stream=stream,
                approver=self.approver,
                audit=self.audit,
                results=self.results,
            )
            messages = [Message.system(agent.instructions), Message.user(task)]
            return await loop.run(run_id, messages)
        finally:
            if unsubscribe:
                unsubscribe()

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

    def events(self, run_id: str) -> tuple[RunEvent, ...]:
        """The events of a run executed by this harness, in order."""
        return tuple(self._runs[run_id].events)

    def _model(self, agent: AgentSpec) -> Model:
        if not isinstance(agent.model, str):
            return agent.model
        model = resolve_model(agent.model, self.settings.profiles, base_url=self._base_url)
        self._opened.append(model)
        return model

    async def _toolset(self, agent: AgentSpec) -> Toolset:
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
                )
                for t in agent.tools
            ]
            specs += await self._mcp_tools(agent)
            if specs and all(spec.name != READ_RESULT for spec in specs):
                specs.append(read_result_tool())
            toolset = Toolset(specs)
            self._toolsets[agent] = toolset
        return toolset


def _only(run_id: str, callback: Callable[[RunEvent], None]) -> Callable[[RunEvent], None]:
    def deliver(event: RunEvent) -> None:
        if event.run_id == run_id:
            callback(event)

    return deliver
