"""`harness send RUN "text"`: a message to a run's inbox, from any terminal."""

from __future__ import annotations

from typing import Annotated

import typer

from harness.cli.app import app
from harness.cli.runs import steer

__all__ = ["send"]


@app.command()
def send(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="The run id.")],
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The message.")],
    sender: Annotated[
        str, typer.Option("--sender", help="Who sends it, as the run is told.")
    ] = "user",
) -> None:
    """Send a message to a run: it reads it at its next step (or wakes from wait_for_message)."""
    message_id = steer(lambda h: h.send(run_id, text, sender=sender))
    typer.echo(f"message {message_id} sent to {run_id}")
