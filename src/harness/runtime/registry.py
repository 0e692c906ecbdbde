"""`ToolRegistry`: every tool a `Harness` offers, registered once, picked by agents.

Three kinds of tool live in it, each under one name::

    python    word_count               Harness.register_tool(...), [tools.NAME] function = ...
    builtin   bash, read_file ...      made per agent (its workspace), listed once
    mcp:S     github.search_issues     the tools of [mcp.github], one connection per server

An agent's `tools` pick from it (`select`): a name (`"bash"`, `"github.search_issues"`),
every tool with a tag (`"tag:db"`), a glob (`"fs_*"`, `"github.*"`: `*` and `?` stay within
one dot-separated part, so `"*"` is every tool but the MCP ones and `"*.*"` every MCP tool),
or all of a server's tools (`"mcp:github"`, as `AgentSpec.mcp` does). The model calls an MCP
tool by the name the server gives it (with the server's `tool_prefix`), as it always did;
the registry's dotted name keeps servers apart where people read and configure it.

A tool's `max_concurrent` (from the `ToolSpec`, or `[tools.NAME] max_concurrent` over it)
is one `CallSlots` per registry: every agent's toolset gets the same one, so the limit
holds across all agents and runs of the `Harness` (of the process, with one `Harness`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fnmatch
import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from weakref import WeakKeyDictionary

from harness.agent.spec import AgentSpec
from harness.errors import ConfigError, ToolDefinitionError
from harness.tools import READ_RESULT, Toolset, ToolSpec
from harness.tools.limits import CallSlots
from harness.tools.mcp import MCPServerConfig, MCPToolSource

if TYPE_CHECKING:
    from harness.runtime.settings import Settings

__all__ = ["RegisteredTool", "ToolConfig", "ToolRegistry", "is_selector"]

_GLOB: Final = frozenset("*?[")
TAG: Final = "tag:"
MCP: Final = "mcp:"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolConfig:
    """One `[tools.NAME]` table of `harness.toml`."""

    name: str
    """The tool's registry name (`lookup`, `github.search_issues`)."""
    max_concurrent: int | None = None
    """Calls of the tool that may run at once, over the tool's own `max_concurrent`."""
    tags: tuple[str, ...] = ()
    """Tags added to the tool's own."""
    function: str | None = None
    """`package.module:function`: registers that Python function as tool `name`."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RegisteredTool:
    """One tool of the registry, as `harness tools list` shows it."""

    name: str
    """Its name in the registry: `word_count`, `bash`, `github.search_issues`."""
    source: str
    """Where it comes from: `python`, `builtin` or `mcp:SERVER`."""
    spec: ToolSpec
    """The tool (for a built-in one: as made for the current directory)."""
    tags: tuple[str, ...] = ()
    """Its tags: the spec's and those `[tools.NAME]` adds."""
    max_concurrent: int | None = None
    """Calls that may run at once (`[tools.NAME]` over the spec); `None`: no limit."""

    @property
    def model_name(self) -> str:
        """The name the model calls it by (an MCP tool's server-given name)."""
        return self.spec.name


def is_selector(name: str) -> bool:
    """Whether an agent's tool entry names several tools: a tag or a glob."""
    return name.startswith(TAG) or not _GLOB.isdisjoint(name)


def glob_match(name: str, pattern: str) -> bool:
    """`fnmatch` part by part: `*` and `?` never cross a `.` (`github.*`, `fs_*`)."""
    names, patterns = name.split("."), pattern.split(".")
    return len(names) == len(patterns) and all(
        fnmatch.fnmatchcase(n, p) for n, p in zip(names, patterns, strict=True)
    )


class ToolRegistry:
    """The tools of one `Harness`: registered once, selected by name, tag or glob.

    Args:
        settings: `[mcp.NAME]` servers and `[tools.NAME]` tables.
        private: Directories no built-in tool may reach (harness's home ...).

    Raises:
        ConfigError: An MCP server's name holds a `.`, or a `[tools.NAME] function` does
            not import.
    """

    def __init__(self, settings: Settings, *, private: tuple[Path, ...] = ()) -> None:
        self._settings = settings
        self._private = private
        self._configs: Mapping[str, ToolConfig] = settings.tools
        self._tools: dict[str, RegisteredTool] = {}
        self._slots: dict[str, CallSlots] = {}
        self._servers: dict[str, MCPServerConfig] = {}
        self._started: set[str] = set()
        self._mcp_lock: asyncio.Lock | None = None
        self._exits = contextlib.AsyncExitStack()
        self._toolsets: WeakKeyDictionary[AgentSpec, Toolset] = WeakKeyDictionary()
        self._checked: WeakKeyDictionary[AgentSpec, frozenset[str]] = WeakKeyDictionary()
        self._builtins_listed = False
        for server in settings.mcp_servers.values():
            self._add_server(server)
        for config in self._configs.values():
            if config.function is not None:
                self.register(_import_tool(config))

    # -- registering ------------------------------------------------------------------

    def register(
        self,
        tool: ToolSpec | Callable[..., Any],
        *,
        tags: Iterable[str] = (),
        max_concurrent: int | None = None,
    ) -> ToolSpec:
        """Register a Python tool once for every agent of the `Harness`.

        Args:
            tool: A `ToolSpec` (from `@tool`), or a typed, documented function (made one
                with `tool`).
            tags: Tags added to the tool's own.
            max_concurrent: Calls that may run at once, over the tool's own.

        The same function registered again replaces its entry (new tags or limit), for
        toolsets built from then on.

        Returns:
            The spec as registered.

        Raises:
            ToolDefinitionError: Another tool already has the name, or the function
                cannot be a tool.
        """
        self._list_builtins()
        if not isinstance(tool, ToolSpec):
            from harness.tools import tool as make_tool

            tool = make_tool(tool)
        changes: dict[str, Any] = {}
        if tags:
            changes["tags"] = tuple(dict.fromkeys((*tool.tags, *tags)))
        if max_concurrent is not None:
            changes["max_concurrent"] = max_concurrent
        spec = dataclasses.replace(tool, **changes) if changes else tool
        existing = self._tools.get(spec.name)
        same = existing is not None and existing.spec.function is spec.function
        if existing is not None and not (same and existing.source == "python"):
            raise ToolDefinitionError(
                f"A tool named {spec.name!r} is already registered ({existing.source}); "
                "give this one another name (@tool(name=...))."
            )
        self._add(spec.name, "python", spec)
        return spec

    def _add(self, name: str, source: str, spec: ToolSpec | None) -> None:
        config = self._configs.get(name)
        if spec is None:  # a built-in: listed as made for the current directory
            spec = self._make_builtin(name, None)
        tags = tuple(dict.fromkeys((*spec.tags, *(config.tags if config else ()))))
        limit = config.max_concurrent if config and config.max_concurrent else spec.max_concurrent
        self._tools[name] = RegisteredTool(
            name=name, source=source, spec=spec, tags=tags, max_concurrent=limit
        )

    def _list_builtins(self) -> None:
        """Put the built-in tools in the registry; the sandbox's modules load only now."""
        if self._builtins_listed:
            return
        from harness.tools.builtin import BUILTIN_TOOLS

        self._builtins_listed = True
        for name in (*BUILTIN_TOOLS, READ_RESULT):
            if name not in self._tools:
                self._add(name, "builtin", None)

    def _make_builtin(self, name: str, agent: AgentSpec | None) -> ToolSpec:
        if name == READ_RESULT:
            from harness.tools.builtin.read_result import read_result_tool

            return read_result_tool()
        from harness.tools.builtin import builtin_tool

        return builtin_tool(
            name,
            workspace=agent.workspace if agent else None,
            network=agent.network if agent else False,
            allow_unsandboxed=agent.allow_unsandboxed if agent else False,
            private=self._private,
        )

    def _add_server(self, config: MCPServerConfig) -> None:
        known = self._servers.get(config.name)
        if known is not None:
            if known != config:
                raise ConfigError(
                    f"two different MCP servers are named {config.name!r}: one connection "
                    "per server name is shared by every agent; give them different names"
                )
            return
        if "." in config.name:
            raise ConfigError(
                f"MCP server {config.name!r}: its name cannot hold '.', since the registry "
                "calls its tools SERVER.TOOL; rename the [mcp.NAME] table"
            )
        self._servers[config.name] = config

    # -- reading ----------------------------------------------------------------------

    @property
    def configs(self) -> Mapping[str, ToolConfig]:
        """The `[tools.NAME]` tables, by name."""
        return self._configs

    @property
    def servers(self) -> Mapping[str, MCPServerConfig]:
        """The MCP servers the registry can start, by name."""
        return self._servers

    def get(self, name: str) -> RegisteredTool | None:
        """The tool registered as `name` (an MCP tool once its server started)."""
        self._list_builtins()
        return self._tools.get(name)

    def tools(self) -> tuple[RegisteredTool, ...]:
        """Every registered tool, by name (MCP tools of started servers only)."""
        self._list_builtins()
        return tuple(sorted(self._tools.values(), key=lambda t: t.name))

    def slots(self, name: str) -> CallSlots | None:
        """The concurrency limit of tool `name` shared by every agent, once one used it."""
        return self._slots.get(name)

    # -- MCP --------------------------------------------------------------------------

    async def start_mcp(self, names: Iterable[str] | None = None) -> None:
        """Start MCP servers (all when `names` is `None`) and register their tools.

        Each server starts once per registry; a started one is left as it is.

        Raises:
            ConfigError: No server has one of the names.
        """
        wanted = list(self._servers if names is None else names)
        for name in wanted:
            if name not in self._servers:
                raise ConfigError(self._no_server(name))
        if self._mcp_lock is None:
            self._mcp_lock = asyncio.Lock()
        async with self._mcp_lock:  # two agents built at once start a server once
            for name in wanted:
                if name not in self._started:
                    await self._start(self._servers[name])

    async def _start(self, config: MCPServerConfig) -> None:
        log = self._settings.home / "logs" / f"mcp-{config.name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        errlog = self._exits.enter_context(log.open("a", encoding="utf-8"))
        source = await self._exits.enter_async_context(MCPToolSource(config, errlog=errlog))
        for spec in source.tools:
            name = f"{config.name}.{spec.name.removeprefix(config.tool_prefix) or spec.name}"
            self._add(name, f"{MCP}{config.name}", spec)
        self._started.add(config.name)

    def _no_server(self, name: str) -> str:
        from harness.runtime.settings import CONFIG_FILE

        known = ", ".join(sorted(self._servers)) or "none"
        return (
            f"no MCP server named {name!r} in {self._settings.home / CONFIG_FILE} "
            f"(configured: {known}); add an [mcp.{name}] table with a command or url"
        )

    async def aclose(self) -> None:
        """Stop the MCP servers; their tools leave the registry."""
        await self._exits.aclose()
        for name in [n for n, t in self._tools.items() if t.source.startswith(MCP)]:
            del self._tools[name]
        self._started.clear()
        self._toolsets.clear()

    # -- selecting --------------------------------------------------------------------

    def check(self, agent: AgentSpec) -> frozenset[str]:
        """Check the agent's tool names without starting any server; its built-ins.

        What needs an MCP server's list (a tool of a server, a tag only MCP tools could
        carry) is checked when the agent's toolset is built.

        Returns:
            The built-in tools the agent gets (for the workspace check).

        Raises:
            ConfigError: A name no tool has, a glob or tag that matches none, an unknown
                MCP server; the message lists what exists.
        """
        found = self._checked.get(agent)
        if found is None:
            names: set[str] = set()
            for entry in agent.mcp:
                if isinstance(entry, MCPServerConfig):
                    self._add_server(entry)  # its tools are picked by SERVER.TOOL too
                elif entry not in self._servers:
                    raise ConfigError(self._no_server(entry))
            for selector in (t for t in agent.tools if isinstance(t, str)):
                servers = self._servers_for(selector)
                local = self._match(selector, mcp=False)
                if not local and not servers:
                    raise ConfigError(self._nothing(agent, selector))
                names.update(t.name for t in local if t.source == "builtin")
            found = self._checked[agent] = frozenset(names)
        return found

    async def select(self, agent: AgentSpec) -> list[RegisteredTool]:
        """The registered tools the agent's `tools` and `mcp` pick, in their order.

        Starts the MCP servers they need (once per registry).

        Raises:
            ConfigError: A name, glob or tag that picks no tool; the message lists what
                exists.
        """
        selectors = [t for t in agent.tools if isinstance(t, str)]
        servers: list[str] = []
        for entry in agent.mcp:
            if isinstance(entry, MCPServerConfig):
                self._add_server(entry)
                entry = entry.name
            servers.append(entry)
            selectors.append(f"{MCP}{entry}")
        for selector in selectors:
            servers += self._servers_for(selector)
        await self.start_mcp(dict.fromkeys(servers))
        picked: dict[str, RegisteredTool] = {}
        for selector in selectors:
            matched = self._match(selector, mcp=True)
            if not matched:
                raise ConfigError(self._nothing(agent, selector))
            picked.update((t.name, t) for t in matched)
        return list(picked.values())

    def _match(self, selector: str, *, mcp: bool) -> list[RegisteredTool]:
        self._list_builtins()
        tools = [t for t in self._tools.values() if mcp or not t.source.startswith(MCP)]
        if selector.startswith(TAG):
            tag = selector.removeprefix(TAG)
            return [t for t in tools if tag in t.tags]
        if selector.startswith(MCP):
            source = selector
            return [t for t in tools if t.source == source]
        if not _GLOB.isdisjoint(selector):
            return [t for t in tools if glob_match(t.name, selector)]
        found = self._tools.get(selector)
        return [found] if found is not None and found in tools else []

    def _servers_for(self, selector: str) -> list[str]:
        """The MCP servers whose tools `selector` could pick."""
        if selector.startswith(MCP):
            name = selector.removeprefix(MCP)
            if name not in self._servers:
                raise ConfigError(self._no_server(name))
            return [name]
        if selector.startswith(TAG):
            tag = selector.removeprefix(TAG)
            tagged = (c.name for c in self._configs.values() if tag in c.tags)
            return sorted({n.split(".")[0] for n in tagged if "." in n} & set(self._servers))
        if "." not in selector:
            return []
        server = selector.split(".")[0]
        if not _GLOB.isdisjoint(server):
            return [s for s in self._servers if fnmatch.fnmatchcase(s, server)]
        if server not in self._servers:
            raise ConfigError(self._no_server(server))
        return [server]

    def _nothing(self, agent: AgentSpec, selector: str) -> str:
        kind = "tag" if selector.startswith(TAG) else "glob" if is_selector(selector) else "name"
        what = f"no tool matches {kind} {selector!r}" if kind != "name" else f"no tool {selector!r}"
        names = ", ".join(t.name for t in self.tools())
        tags = sorted({tag for t in self._tools.values() for tag in t.tags})
        servers = ", ".join(sorted(self._servers)) or "none"
        return (
            f"agent {agent.name!r}: {what}. Tools: {names}"
            f"{'; tags: ' + ', '.join(tags) if tags else ''}; MCP servers: {servers} "
            "(their tools are SERVER.TOOL, all of them 'mcp:SERVER'). Register a Python tool "
            "with Harness.register_tool or a [tools.NAME] table with function = 'pkg.mod:func'"
        )

    # -- toolsets ---------------------------------------------------------------------

    async def toolset(self, agent: AgentSpec) -> Toolset:
        """The agent's toolset, with `read_result` added; built once per agent object.

        Every limited tool gets the registry's `CallSlots`, shared with all other agents.

        Raises:
            ConfigError: A name picks nothing, or two picked tools share the name the
                model calls them by.
        """
        toolset = self._toolsets.get(agent)
        if toolset is None:
            specs: list[ToolSpec] = []
            names: dict[str, str] = {}
            for tool in agent.tools:
                if isinstance(tool, ToolSpec):
                    specs.append(tool)
                    names[tool.name] = tool.name
            for entry in await self.select(agent):
                spec = (
                    self._make_builtin(entry.name, agent)
                    if entry.source == "builtin"
                    else entry.spec
                )
                if spec.name in names and names[spec.name] != entry.name:
                    raise ConfigError(self._clash(agent, spec.name, names[spec.name], entry))
                if spec.name not in names:
                    specs.append(spec)
                    names[spec.name] = entry.name
            if specs and READ_RESULT not in names:
                specs.append(self._make_builtin(READ_RESULT, agent))
                names[READ_RESULT] = READ_RESULT
            toolset = Toolset(specs, slots=self._slots_of(specs, names))
            self._toolsets[agent] = toolset
        return toolset

    def _slots_of(
        self, specs: Sequence[ToolSpec], names: Mapping[str, str]
    ) -> dict[str, CallSlots]:
        """The shared slots of each limited tool, by the name the model calls it."""
        found: dict[str, CallSlots] = {}
        for spec in specs:
            name = names[spec.name]
            entry = self._tools.get(name)
            config = self._configs.get(name)
            limit = (
                (config.max_concurrent if config else None)
                or (entry.max_concurrent if entry else None)
                or spec.max_concurrent
            )
            if limit is None:
                continue
            slots = self._slots.get(name)
            if slots is None:
                slots = self._slots[name] = CallSlots(name, limit)
            found[spec.name] = slots
        return found

    def _clash(self, agent: AgentSpec, model_name: str, first: str, entry: RegisteredTool) -> str:
        server = entry.source.removeprefix(MCP)
        return (
            f"agent {agent.name!r}: tools {first!r} and {entry.name!r} are both called "
            f"{model_name!r} by the model; pick one, or set tool_prefix in [mcp.{server}] "
            "to tell them apart"
        )


def _import_tool(config: ToolConfig) -> ToolSpec:
    """The Python tool a `[tools.NAME]` table's `function` names, called `NAME`."""
    ref = config.function or ""
    where = f"key 'tools.{config.name}.function'"
    module_name, _, attribute = ref.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{where}: cannot import {module_name!r}: {exc}") from exc
    found: Any = getattr(module, attribute, None)
    if not isinstance(found, ToolSpec):
        if not callable(found):
            raise ConfigError(f"{where}: {module_name} has no function {attribute!r}")
        from harness.tools import tool

        try:
            found = tool(found)
        except ToolDefinitionError as exc:
            raise ConfigError(f"{where}: {exc}") from exc
    try:
        return dataclasses.replace(found, name=config.name)
    except ToolDefinitionError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
