"""`harness triggers list`: the `[[triggers]]` of harness.toml and how far each has read."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from harness.cli.agents import print_columns
from harness.cli.app import app, fail
from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.runtime._trigger_rules import Trigger
    from harness.store.protocol import FeedPosition

__all__ = ["triggers_app"]

triggers_app = typer.Typer(help="Triggers: agents started on events.", no_args_is_help=True)
app.add_typer(triggers_app, name="triggers")


@triggers_app.command("list")
def triggers_list(
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the triggers of harness.toml, and where each one's cursor stands in the store."""
    import asyncio

    from harness.runtime.harness import Harness
    from harness.runtime.settings import load_settings

    async def read(names: list[str]) -> dict[str, FeedPosition]:
        async with Harness(settings, execute=False) as h:
            return await h.store.feed_cursors(names)

    try:
        settings = load_settings()
        cursors = asyncio.run(read([t.name for t in settings.triggers]))
    except HarnessError as exc:
        fail(str(exc))
    rows = [_row(t, cursors.get(t.name)) for t in settings.triggers]
    if json_output:
        for row in rows:
            typer.echo(json.dumps(row))
    elif not rows:
        typer.echo("no triggers: add a [[triggers]] table to harness.toml")
    else:
        header = ("NAME", "ON", "MATCH", "START", "CURSOR", "TASK")
        print_columns(
            [
                header,
                *(
                    (
                        r["name"],
                        r["on"],
                        _match_text(r["match"]),
                        r["start"],
                        r["cursor"] or "not started",
                        r["task"],
                    )
                    for r in rows
                ),
            ]
        )


def _row(trigger: Trigger, cursor: FeedPosition | None) -> dict[str, Any]:
    return {
        "name": trigger.name,
        "on": trigger.event,
        "match": {k: list(v) for k, v in trigger.match.items()},
        "start": trigger.start,
        "task": trigger.task,
        "task_type": trigger.task_type,
        "reentrant": trigger.reentrant,
        "cursor": f"{cursor.tx}:{cursor.pos}" if cursor is not None else None,
    }


def _match_text(match: dict[str, list[Any]]) -> str:
    if not match:
        return "*"
    return " ".join(f"{k}={'|'.join(map(str, v))}" for k, v in match.items())
