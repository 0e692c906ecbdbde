"""`harness cost`: tokens and US dollars of past runs, by model, tool, task type, agent, day."""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer

from harness.cli.app import app, fail
from harness.cli.runs import steer
from harness.errors import ConfigError
from harness.observability._window import parse_since
from harness.observability.cost import (
    DIMENSIONS,
    CostReport,
    check_dimensions,
    read_cost,
)

__all__ = ["cost"]


@app.command()
def cost(
    by: Annotated[
        list[str] | None,
        typer.Option(
            "--by",
            help=f"Group by {', '.join(DIMENSIONS)}; give several to group by the combination.",
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(help="Only runs created since: 30m, 12h, 7d, or an ISO date (UTC)."),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show what past runs consumed: runs, tokens by kind, US dollars, per completed run.

    By tool, a tool's share is the tokens of its results in every later model request
    that carried them, at that request's input price (docs/observability.md).
    """
    try:
        dims = check_dimensions(by or ())
        start = None if since is None else parse_since(since, now=time.time()).start
    except ConfigError as exc:
        fail(str(exc))
    report: CostReport = steer(lambda h: read_cost(h.store, by=dims, since=start))
    if json_output:
        typer.echo(json.dumps(report.to_dict()))
        return
    from harness.cli.render import print_cost

    print_cost(report)
