"""`harness triggers list`: the `[[triggers]]` of harness.toml and how far each has read.

Triggers added in code (`Harness.on`) live in the processes that add them; the store knows
them by their cursors, listed after the file's (`source` = `store`, as is the cursor of a
trigger since removed from the file).
"""

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
    """List the triggers of harness.toml, and where each one's cursor stands in the store.

    Triggers added in code (`Harness.on`) follow, known by their cursors in the store.
    """
    import asyncio

    from harness.runtime.harness import Harness
    from harness.runtime.settings import load_settings

    async def read() -> dict[str, FeedPosition]:
        async with Harness(settings, execute=False) as h:
            return await h.store.feed_cursors()

    try:
        settings = load_settings()
        cursors = asyncio.run(read())
    except HarnessError as exc:
        fail(str(exc))
    rows = [_row(t, cursors.get(t.name)) for t in settings.triggers]
    in_file = {t.name for t in settings.triggers}
    rows += [_code_row(name, c) for name, c in sorted(cursors.items()) if name not in in_file]
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
        "source": "file",
        "on": trigger.event,
        "match": {k: list(v) for k, v in trigger.match.items()},
        "start": trigger.start,
        "task": trigger.task,
        "task_type": trigger.task_type,
        "reentrant": trigger.reentrant,
        "cursor": f"{cursor.tx}:{cursor.pos}" if cursor is not None else None,
    }


def _code_row(name: str, cursor: FeedPosition) -> dict[str, Any]:
    """A cursor of no trigger of the file: a `Harness.on` trigger's, or a removed one's.

    What a `Harness.on` trigger fires on is known to its process only.
    """
    return {
        "name": name,
        "source": "store",
        "on": "-",
        "match": {},
        "start": "-",
        "task": "not in harness.toml: added with Harness.on (or removed from the file)",
        "task_type": None,
        "reentrant": None,
        "cursor": f"{cursor.tx}:{cursor.pos}",
    }


def _match_text(match: dict[str, list[Any]]) -> str:
    if not match:
        return "*"
    return " ".join(f"{k}={'|'.join(map(str, v))}" for k, v in match.items())
