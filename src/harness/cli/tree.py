"""`harness runs tree RUN` and `harness runs events RUN --tree`: a run and its child runs."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from harness.cli.runs import JsonOpt, RunArg, runs_app, steer
from harness.core.states import TERMINAL_STATES

if TYPE_CHECKING:
    from harness.core.events import RunEvent
    from harness.runtime.harness import Harness
    from harness.store.protocol import RunRecord

__all__ = ["print_tree_events"]

_POLL_S = 0.2


@runs_app.command("tree")
def runs_tree(run_id: RunArg, json_output: JsonOpt = False) -> None:
    """Show the tree of runs RUN belongs to: state, agent, steps and cost of each."""
    from harness.runtime.children import run_tree

    root = steer(lambda h: run_tree(h, run_id))
    if json_output:
        typer.echo(json.dumps(root.to_dict()))
        return
    from harness.cli.render import print_run_tree

    print_run_tree(root, mark=run_id)


def print_tree_events(run_id: str, *, follow: bool, json_output: bool) -> None:
    """Print the events of RUN and of every run below it, by time, each naming its run.

    With `follow`, new events (and new children) are printed as they come, until every
    run of the tree has ended.
    """
    from harness.cli.render import LiveRenderer

    render = LiveRenderer()
    names: dict[str, str] = {}

    def show(event: RunEvent) -> None:
        from harness.core.codec import dumps, event_to_dict

        if json_output:
            typer.echo(dumps(event_to_dict(event)))
            return
        who = names.get(event.run_id, "")
        typer.echo(f"{event.run_id} {who:<12} {event.seq:>4} {_when(event.ts)} {event.type}")
        render(event)

    async def go(h: Harness) -> None:
        seen: dict[str, int] = {}
        notices = 0
        while True:
            top = await h.get(run_id)
            below = await h.store.list_runs(root_run_id=top.root, limit=None)
            runs = _below(run_id, [top, *below])
            names.update({r.run_id: r.agent for r in runs})
            fresh = await _new_events(h, runs, seen)
            for event in fresh:
                show(event)
            if not follow or (not fresh and all(r.state in TERMINAL_STATES for r in runs)):
                return
            if not fresh:
                notices = await h.store.wait_for_notice("events", notices, _POLL_S)

    steer(go)


async def _new_events(h: Harness, runs: list[RunRecord], seen: dict[str, int]) -> list[RunEvent]:
    """The events of `runs` after those `seen` (the last seq shown, by run), by time."""
    events = await h.store.events_of_runs([r.run_id for r in runs])
    fresh = [e for e in events if e.seq > seen.get(e.run_id, 0)]
    for event in fresh:
        seen[event.run_id] = max(seen.get(event.run_id, 0), event.seq)
    return sorted(fresh, key=lambda e: (e.ts, e.run_id, e.seq))


def _below(run_id: str, runs: list[RunRecord]) -> list[RunRecord]:
    """`run_id` and the runs below it, among `runs` (a tree's)."""
    by_parent: dict[str | None, list[RunRecord]] = {}
    for run in runs:
        by_parent.setdefault(run.parent_run_id, []).append(run)
    found = [r for r in runs if r.run_id == run_id]
    for run in found:
        found.extend(by_parent.get(run.run_id, ()))
    return found


def _when(ts: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")
