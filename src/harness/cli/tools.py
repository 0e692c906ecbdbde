"""`harness tools list`: the tool registry, as an agent of harness.toml would see it."""

from __future__ import annotations

import asyncio
import fnmatch
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from harness.cli.app import app, fail
from harness.errors import ConfigError, HarnessError

if TYPE_CHECKING:
    from harness.agent.spec import AgentSpec
    from harness.runtime.registry import RegisteredTool, ToolRegistry
    from harness.runtime.settings import Settings
    from harness.tools import ApprovalPolicy, ToolSpec

__all__ = ["tools_app"]

tools_app = typer.Typer(help="The tools agents pick from: the registry.", no_args_is_help=True)
app.add_typer(tools_app, name="tools")


@tools_app.command("list")
def tools_list(
    agent: Annotated[
        str | None,
        typer.Option("--agent", "-a", help="Only the tools this agent of harness.toml gets."),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print JSON, one tool a line.")
    ] = False,
) -> None:
    """List every tool: schema, side effects, approval, timeout, max_concurrent, source, tags.

    Built-in tools, Python tools of [tools.NAME] tables and of agents, and the tools of
    every [mcp.NAME] server (started for the listing, then stopped).
    """
    from harness.runtime.settings import load_settings

    try:
        settings = load_settings()
        rows = asyncio.run(_rows(settings, agent))
    except (ConfigError, HarnessError) as exc:
        fail(str(exc))
    if json_output:
        for row in rows:
            typer.echo(json.dumps(row))
        return
    _print(rows, agent)


async def _rows(settings: Settings, agent_name: str | None) -> list[dict[str, Any]]:
    from harness.runtime._catalog import AgentCatalog
    from harness.runtime.registry import ToolRegistry
    from harness.runtime.resources import private_directories

    registry = ToolRegistry(settings, private=private_directories(settings.home))
    catalog = AgentCatalog(settings)
    try:
        if agent_name is not None:
            agent = catalog.base_for(agent_name, None)
            toolset = await registry.toolset(agent)
            names = {t.spec.name: t for t in registry.tools()}
            return [_row(names.get(spec.name), spec, agent.approvals, registry) for spec in toolset]
        await registry.start_mcp()
        rows = [_row(t, t.spec, settings.approvals, registry) for t in registry.tools()]
        rows += _agent_tools(settings, catalog, registry, {t.name for t in registry.tools()})
        return sorted(rows, key=lambda row: row["name"])
    finally:
        await registry.aclose()


def _agent_tools(
    settings: Settings, catalog: Any, registry: ToolRegistry, listed: set[str]
) -> list[dict[str, Any]]:
    """The Python tools agents of the file name as `package.module:function`."""
    from harness.tools import ToolSpec

    rows: list[dict[str, Any]] = []
    for name in sorted(settings.agents):
        agent: AgentSpec = catalog.get(name)
        for spec in agent.tools:
            if isinstance(spec, ToolSpec) and spec.name not in listed:
                listed.add(spec.name)
                rows.append(_row(None, spec, settings.approvals, registry))
    return rows


def _row(
    entry: RegisteredTool | None,
    spec: ToolSpec,
    policy: ApprovalPolicy,
    registry: ToolRegistry,
) -> dict[str, Any]:
    name = entry.name if entry is not None else spec.name
    config = registry.configs.get(name)
    limit = (config.max_concurrent if config else None) or (
        entry.max_concurrent if entry is not None else spec.max_concurrent
    )
    tags = entry.tags if entry is not None else (*spec.tags, *(config.tags if config else ()))
    return {
        "name": name,
        "model_name": spec.name,
        "source": entry.source if entry is not None else "python",
        "description": spec.description,
        "side_effects": spec.side_effects,
        "approval": policy.tools.get(spec.name, spec.approval),
        "approval_rules": sum(1 for r in policy.rules if fnmatch.fnmatchcase(spec.name, r.tool)),
        "timeout_s": spec.timeout,
        "max_concurrent": limit,
        "max_result_chars": spec.max_result_chars,
        "tags": list(dict.fromkeys(tags)),
        "parameters": spec.parameters,
    }


def _print(rows: Sequence[dict[str, Any]], agent: str | None) -> None:
    from harness.cli.render import print_table
    from harness.core.usage import DEFAULT_TOOL_TIMEOUT

    if not rows:
        typer.echo("no tools" + (f" for agent {agent!r}" if agent else ""))
        return
    headers = (
        "NAME",
        "SOURCE",
        "SIDE EFFECTS",
        "APPROVAL",
        "TIMEOUT",
        "MAX CONC.",
        "TAGS",
        "PARAMETERS",
    )
    table = [
        (
            row["name"] + ("" if row["model_name"] == row["name"] else f" ({row['model_name']})"),
            row["source"],
            row["side_effects"],
            _approval(row),
            f"{DEFAULT_TOOL_TIMEOUT:g} s (default)"
            if row["timeout_s"] is None
            else f"{row['timeout_s']:g} s",
            "-" if row["max_concurrent"] is None else str(row["max_concurrent"]),
            ", ".join(row["tags"]) or "-",
            _parameters(row["parameters"]),
        )
        for row in rows
    ]
    print_table(headers, table, title=f"tools of agent {agent}" if agent else "")


def _approval(row: dict[str, Any]) -> str:
    rules = row["approval_rules"]
    return row["approval"] + (f" +{rules} rule(s)" if rules else "")


def _parameters(schema: dict[str, Any]) -> str:
    """`name: type` for each parameter, `?` after the optional ones."""
    properties: dict[str, Any] = schema.get("properties") or {}
    required: set[Any] = set(schema.get("required") or ())
    parts = [
        f"{name}{'' if name in required else '?'}: {_type(value)}"
        for name, value in properties.items()
    ]
    return ", ".join(parts) or "-"


def _type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    kind: Any = cast(dict[str, Any], schema).get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in cast(list[Any], kind))
    return str(kind) if kind else "any"
