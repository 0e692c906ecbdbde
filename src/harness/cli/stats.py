"""`harness stats`: how past runs went, drawn from the store."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from harness.cli.app import app, fail
from harness.cli.runs import JsonOpt, steer
from harness.errors import ConfigError

__all__ = ["stats"]


@app.command()
def stats(
    since: Annotated[
        str, typer.Option(help="Runs created in this window: 30m, 12h, 7d, 2w or an ISO date.")
    ] = "7d",
    agent: Annotated[str | None, typer.Option(help="Only runs of this agent.")] = None,
    task_type: Annotated[
        str | None, typer.Option("--task-type", help="Only runs of this task type.")
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """Tool calls and success, context growth, latency and termination reasons of past runs."""
    from harness.cli.render import print_stats
    from harness.core.clock import SystemClock
    from harness.observability._window import parse_since
    from harness.observability.stats import compute_stats, stats_to_dict

    try:
        window = parse_since(since, now=SystemClock().now())
    except ConfigError as exc:
        fail(str(exc))
    found = steer(
        lambda h: compute_stats(h.store, since=window.start, agent=agent, task_type=task_type)
    )
    if json_output:
        typer.echo(json.dumps({"window": window.text, **stats_to_dict(found)}))
    else:
        print_stats(found, window.text)
