"""`harness models list | check NAME`: the model profiles, and whether a server answers."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from harness.cli.app import app, fail
from harness.errors import ConfigError, HarnessError

if TYPE_CHECKING:
    # `harness --help` does not need these: loaded by the commands that use them.
    from harness.gateway.probe import ModelCheck
    from harness.gateway.profiles import ModelProfile
    from harness.runtime.settings import Settings

__all__ = ["models_app", "profile_summary"]

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
_HEADER = ("NAME", "PROVIDER", "MODEL", "BASE URL", "CONTEXT", "TOOL CALLS", "$/M IN/OUT/CACHED")

models_app = typer.Typer(help="Model profiles: list them, or check one.", no_args_is_help=True)
app.add_typer(models_app, name="models")


def profile_summary(profile: ModelProfile, *, default: bool = False) -> dict[str, Any]:
    """What `models list` shows of one profile, as JSON-compatible data."""
    return {
        "name": profile.name,
        "default": default,
        "provider": profile.provider,
        "model": profile.model,
        "base_url": profile.base_url,
        "context_window": profile.context_window,
        "max_output_tokens": profile.max_output_tokens,
        "tool_calls": profile.tool_calls,
        "native_tools": profile.native_tools,
        "fallbacks": list(profile.fallbacks),
        "max_retries": profile.max_retries,
        "concurrency": profile.concurrency,
        "prices": None
        if profile.prices is None
        else {
            "input": profile.prices.input,
            "output": profile.prices.output,
            "cached_input": profile.prices.cached_input,
        },
    }


@models_app.command("list")
def models_list(json_output: JsonOpt = False) -> None:
    """List the model profiles: built-in and from harness.toml or the environment."""
    settings = _settings()
    rows = [
        profile_summary(profile, default=name == settings.default_model)
        for name, profile in sorted(settings.profiles.items())
    ]
    if json_output:
        for row in rows:
            typer.echo(json.dumps(row))
        return
    lines = [_HEADER, *(_row(row) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(_HEADER) - 1)]
    for line in lines:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        typer.echo("  ".join([*cells, line[-1]]).rstrip())
    if settings.default_model not in settings.profiles:
        typer.echo(f"default model: {settings.default_model}")


@models_app.command("check")
def models_check(
    name: Annotated[str, typer.Argument(metavar="NAME", help="A profile or provider:MODEL.")],
    base_url: Annotated[
        str | None, typer.Option(help="Check this server instead of the profile's.")
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """Send NAME's server one tiny request, and one with a tool; report what came back."""
    import asyncio

    from harness.gateway.probe import check_profile
    from harness.gateway.profiles import resolve_profile

    settings = _settings()
    try:
        profile = resolve_profile(name, settings.profiles, base_url=base_url)
        check = asyncio.run(check_profile(profile))
    except HarnessError as exc:
        fail(str(exc))
    if json_output:
        typer.echo(json.dumps(check.as_dict()))
    else:
        _print_check(check)
    if not check.ok:
        from harness.cli.render import print_error

        print_error(check.error or "the model did not answer")
        raise typer.Exit(1)


def _row(row: dict[str, Any]) -> tuple[str, ...]:
    prices = row["prices"]
    cost = "unknown" if prices is None else "free"
    if prices is not None:
        cached = prices["input"] if prices["cached_input"] is None else prices["cached_input"]
        if prices["input"] or prices["output"] or cached:
            cost = f"{prices['input']:g}/{prices['output']:g}/{cached:g}"
    fallbacks = f" → {', '.join(row['fallbacks'])}" if row["fallbacks"] else ""
    return (
        row["name"] + (" *" if row["default"] else ""),
        row["provider"],
        row["model"],
        row["base_url"] or "(provider's)",
        str(row["context_window"] or "?"),
        row["tool_calls"] + ("" if row["native_tools"] else " (no native)"),
        cost + fallbacks,
    )


def _print_check(check: ModelCheck) -> None:
    where = check.base_url or "the provider's API"
    typer.echo(f"{check.profile}: {check.provider} model {check.model!r} at {where}")
    if not check.reachable:
        typer.echo("  reachable:         no")
        return
    if not check.answered:
        typer.echo("  reachable:         yes, but the request failed")
        return
    typer.echo(f"  reachable:         yes, answered in {check.latency_s or 0:.2f} s")
    typer.echo(f"  reply:             {check.reply or '(empty)'}")
    typer.echo(f"  native tool calls: {_tools_line(check)}")
    typer.echo(f"  context window:    {_window_line(check)}")


def _tools_line(check: ModelCheck) -> str:
    if check.native_tool_calls:
        return "yes"
    return (
        f"no — got: {check.tool_reply}\n"
        '    If that text holds a tool call, set tool_calls = "text:FORMAT" (or '
        "native_tools = false) in the profile;\n"
        "    for llama.cpp, start llama-server with --jinja."
    )


def _window_line(check: ModelCheck) -> str:
    if check.context_window is None:
        return "unknown (set context_window in the profile)"
    line = f"{check.context_window} tokens (from the {check.context_window_source})"
    server = check.server_context_window
    if check.context_window_source == "profile" and server and server < check.context_window:
        line += f"; the server reports only {server}: lower the profile's context_window"
    elif check.context_window_source == "profile" and server:
        line += f"; the server reports {server}"
    return line


def _settings() -> Settings:
    from harness.runtime.settings import load_settings

    try:
        return load_settings()
    except ConfigError as exc:
        fail(str(exc))
