"""`harness agents list | show NAME` and `harness config show`: agents of the configuration."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from harness.cli.app import app, fail
from harness.errors import ConfigError
from harness.runtime._agents_config import LIMIT_KEYS, Overrides
from harness.runtime.settings import Settings, load_settings

__all__ = ["agents_app", "config_app", "print_columns"]

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]

agents_app = typer.Typer(
    help="Agents of harness.toml and installed packages.", no_args_is_help=True
)
app.add_typer(agents_app, name="agents")
config_app = typer.Typer(help="The configuration in effect.", no_args_is_help=True)
app.add_typer(config_app, name="config")


def _settings() -> Settings:
    try:
        return load_settings()
    except ConfigError as exc:
        fail(str(exc))


def print_columns(rows: Sequence[Sequence[str]]) -> None:
    """Print rows as left-aligned columns (the last one unpadded)."""
    if not rows:
        return
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        typer.echo("  ".join([*cells, row[-1]]).rstrip())


@agents_app.command("list")
def agents_list(json_output: JsonOpt = False) -> None:
    """List the agents: [agents.NAME] tables and the harness.agents entry points."""
    from harness.runtime._catalog import entry_point_names

    settings = _settings()
    rows: list[dict[str, Any]] = [
        {
            "name": name,
            "source": "harness.toml",
            "model": config.model or settings.default_model,
            "strategy": config.strategy or settings.default_strategy,
            "tools": list(config.tools),
            "description": config.description,
        }
        for name, config in sorted(settings.agents.items())
    ]
    rows += [
        {"name": name, "source": "entry point", "model": None, "strategy": None, "tools": None}
        for name in sorted(entry_point_names() - set(settings.agents))
    ]
    if json_output:
        for row in rows:
            typer.echo(json.dumps(row))
        return
    if not rows:
        typer.echo("no agents: add an [agents.NAME] table to harness.toml")
        return
    table = [("NAME", "SOURCE", "MODEL", "STRATEGY", "TOOLS", "DESCRIPTION")]
    table += [
        (
            r["name"],
            r["source"],
            r["model"] or "-",
            r["strategy"] or "-",
            ", ".join(r["tools"]) if r["tools"] is not None else "-",
            r.get("description") or "",
        )
        for r in rows
    ]
    print_columns(table)


@agents_app.command("show")
def agents_show(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The agent's name.")],
    json_output: JsonOpt = False,
) -> None:
    """Show an agent as its runs get it (before task types and experiments)."""
    _show(_settings(), agent=name, task_type=None, json_output=json_output)


@config_app.command("show")
def config_show(
    agent: Annotated[str | None, typer.Option("--agent", "-a", help="An agent's name.")] = None,
    task_type: Annotated[str | None, typer.Option(help="A task type.")] = None,
    model: Annotated[str | None, typer.Option(help="As `harness run --model`.")] = None,
    strategy: Annotated[str | None, typer.Option(help="As `harness run --strategy`.")] = None,
    max_steps: Annotated[int | None, typer.Option(min=1, help="As `harness run`.")] = None,
    json_output: JsonOpt = False,
) -> None:
    """Print each effective value of a run, and where it came from.

    Precedence: explicit flag > experiment variant > task type > agent > [defaults] >
    built-in default.
    """
    limits = {} if max_steps is None else {"max_steps": max_steps}
    given = model is not None or strategy is not None or bool(limits)
    overrides = Overrides(model=model, strategy=strategy, limits=limits) if given else None
    _show(
        _settings(), agent=agent, task_type=task_type, overrides=overrides, json_output=json_output
    )


_FLAGS = {
    "model": "--model",
    "strategy": "--strategy",
    **{f"limits.{k}": f"--{k.replace('_', '-')}" for k in LIMIT_KEYS},
}


def _show(
    settings: Settings,
    *,
    agent: str | None,
    task_type: str | None,
    json_output: bool,
    overrides: Overrides | None = None,
) -> None:
    from harness.runtime._explain import explain

    try:
        found = explain(
            settings, agent=agent, task_type=task_type, overrides=overrides, flags=_FLAGS
        )
    except ConfigError as exc:
        fail(str(exc))
    if json_output:
        typer.echo(json.dumps({s.key: {"value": s.value, "source": s.source} for s in found}))
        return
    print_columns([("KEY", "VALUE", "FROM"), *((s.key, _short(s.value), s.source) for s in found)])


def _short(value: Any, width: int = 60) -> str:
    if value is None:
        text = "-"
    elif isinstance(value, list):
        text = ", ".join(str(v) for v in value) or "none"  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    elif isinstance(value, dict):
        text = json.dumps(value)
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
