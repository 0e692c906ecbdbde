"""Commands that look at and steer runs in the store, from any terminal."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from harness.cli.app import app, fail
from harness.core.ids import check_task_type
from harness.core.states import RunState
from harness.errors import ConfigError, HarnessError
from harness.runtime.harness import Harness, already_decided, stored_context

if TYPE_CHECKING:
    # `harness --help` does not need these: loaded by the commands that use them.
    from harness.observability import TracedSpan
    from harness.observability.serve import MetricsServer
    from harness.store.protocol import RunRecord

__all__ = ["runs_app"]

T = TypeVar("T")
RunArg = Annotated[str, typer.Argument(metavar="RUN", help="The run id.")]
CallArg = Annotated[str, typer.Argument(metavar="CALL", help="The tool call id.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]

runs_app = typer.Typer(help="Look at runs in the store.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")


def steer(work: Callable[[Harness], Awaitable[T]]) -> T:
    """Open the store without executing runs, do `work`, and report errors plainly."""
    import asyncio

    from harness.runtime.settings import load_settings

    async def go() -> T:
        async with Harness(load_settings(), execute=False) as harness:
            return await work(harness)

    try:
        return asyncio.run(go())
    except HarnessError as exc:
        fail(str(exc))


@app.command()
def pause(run_id: RunArg) -> None:
    """Pause a run at its next step boundary (from any process)."""
    steer(lambda h: h.pause(run_id))
    typer.echo(f"pause requested for {run_id}")


@app.command()
def resume(run_id: RunArg) -> None:
    """Continue a PAUSED run, or start a new run from a FAILED or CANCELLED one."""
    new_id = steer(lambda h: h.resume(run_id))
    typer.echo(new_id if new_id != run_id else f"resumed {run_id}")


@app.command()
def cancel(
    run_id: RunArg,
    reason: Annotated[str | None, typer.Option(help="Why; recorded with the run.")] = None,
) -> None:
    """Cancel a run; a model call or tool in flight is interrupted."""
    steer(lambda h: h.cancel(run_id, reason=reason))
    typer.echo(f"cancel requested for {run_id}")


@app.command()
def approve(run_id: RunArg, call_id: CallArg) -> None:
    """Let a tool call that is waiting for approval run."""
    steer(lambda h: _decide_if_waiting(h, run_id, call_id, lambda: h.approve(run_id, call_id)))
    typer.echo(f"approved {call_id} of {run_id}")


@app.command()
def deny(
    run_id: RunArg,
    call_id: CallArg,
    reason: Annotated[str, typer.Option(help="Why; the model is told.")] = "denied by the user",
) -> None:
    """Refuse a tool call that is waiting for approval; the model gets the reason."""
    steer(
        lambda h: _decide_if_waiting(
            h, run_id, call_id, lambda: h.deny(run_id, call_id, reason=reason)
        )
    )
    typer.echo(f"denied {call_id} of {run_id}")


@app.command()
def approvals(json_output: JsonOpt = False) -> None:
    """List the tool calls waiting for approval."""
    pending = steer(lambda h: h.pending_approvals())
    for request in pending:
        if json_output:
            typer.echo(json.dumps(request))
        else:
            typer.echo(
                f"{request['run_id']} {request['call_id']} {request['tool']} {request['arguments']}"
            )
    if not pending and not json_output:
        typer.echo("No tool call is waiting for approval.")


@app.command()
def audit(run_id: RunArg, json_output: JsonOpt = False) -> None:
    """Show the audit record of every tool call of a run."""
    records = steer(lambda h: h.store.audit(run_id))
    if not records:
        fail(f"no audit records for run {run_id}")
    for record in records:
        if json_output:
            typer.echo(json.dumps(record))
        else:
            typer.echo(
                f"{record['call_id']} {record['tool']} {record['status']} "
                f"decision={record['decision']} by={record['decided_by']} "
                f"sandbox={record.get('sandbox') or '-'} exit={record.get('exit_code')} "
                f"{record['duration_s']:.3f}s {str(record['arguments'])[:80]}"
            )


@app.command()
def replay(run_id: RunArg, json_output: JsonOpt = False) -> None:
    """Print the exact message history of a run, rebuilt from the store."""
    from harness.core.codec import dumps, message_to_dict

    messages = steer(lambda h: h.messages(run_id))
    for message in messages:
        if json_output:
            typer.echo(dumps(message_to_dict(message)))
            continue
        calls = " ".join(f"→ {c.name}({c.arguments}) [{c.id}]" for c in message.tool_calls)
        answers = f" [answers {message.tool_call_id}]" if message.tool_call_id else ""
        typer.echo(f"── {message.role}{answers}")
        for text in (message.content, calls):
            if text:
                typer.echo(text)


@runs_app.command("list")
def runs_list(
    state: Annotated[str | None, typer.Option(help="Only runs in this state.")] = None,
    agent: Annotated[str | None, typer.Option(help="Only runs of this agent.")] = None,
    task_type: Annotated[str | None, typer.Option(help="Only runs of this task type.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 50,
    json_output: JsonOpt = False,
) -> None:
    """List runs, newest first."""
    if state is not None and state.upper() not in RunState.__members__:
        fail(f"--state: no run state {state!r}; use one of {', '.join(RunState.__members__)}")
    try:
        check_task_type(task_type)
    except ConfigError as exc:
        fail(f"--task-type: {exc}")
    records = steer(lambda h: h.list(state=state, agent=agent, task_type=task_type, limit=limit))
    for record in records:
        if json_output:
            typer.echo(json.dumps(_record_dict(record)))
        else:
            kind = f" [{record.task_type}]" if record.task_type else ""
            typer.echo(
                f"{record.run_id}  {record.state:<12} {record.agent:<12} "
                f"{_when(record.created_at)}{kind}  {(record.task or '')[:50]}"
            )


@runs_app.command("show")
def runs_show(run_id: RunArg, json_output: JsonOpt = False) -> None:
    """Show one run: state, times, usage, result."""
    record = steer(lambda h: h.get(run_id))
    data = _record_dict(record)
    if json_output:
        typer.echo(json.dumps(data))
        return
    for key, value in data.items():
        typer.echo(f"{key:>16}: {value}")


@runs_app.command("events")
def runs_events(
    run_id: RunArg,
    follow: Annotated[
        bool, typer.Option(help="Keep printing new events until the run ends.")
    ] = False,
    json_output: JsonOpt = False,
    tree: Annotated[
        bool, typer.Option(help="Also the events of its child runs, by time, each naming its run.")
    ] = False,
) -> None:
    """Print a run's events; with --follow, live until it ends."""
    from harness.cli.render import LiveRenderer

    if tree:
        from harness.cli.tree import print_tree_events

        print_tree_events(run_id, follow=follow, json_output=json_output)
        return

    render = LiveRenderer()

    async def show(h: Harness) -> None:
        await h.get(run_id)  # an unknown run is an error, not silence
        if not follow:
            for event in await h.store.events(run_id):
                _print_event(event, render, json_output)
            return
        async for event in h.events(run_id):
            _print_event(event, render, json_output)

    steer(show)


@app.command()
def worker(
    concurrency: Annotated[int, typer.Option(min=1, help="Runs executed at once.")] = 16,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=65535,
            help="Serve Prometheus metrics at http://HOST:PORT/metrics "
            "(default: `[observability] metrics_port`; none when unset).",
        ),
    ] = None,
    metrics_host: Annotated[
        str | None,
        typer.Option(help="The address of the metrics endpoint (default 127.0.0.1)."),
    ] = None,
    metrics_allow_remote: Annotated[
        bool,
        typer.Option(help="Allow a metrics host other than the loopback."),
    ] = False,
    live_steps: Annotated[
        bool,
        typer.Option(
            help="Commit each step before its model call, so that `harness serve`'s "
            "dashboard shows the model called while it thinks (one more commit per model call).",
        ),
    ] = False,
) -> None:
    """Execute queued runs (from `harness run --detach`) until interrupted."""
    import asyncio
    import gc
    import signal

    from harness.observability.serve import check_host
    from harness.runtime.settings import load_settings

    settings = load_settings()
    wanted = settings.metrics
    port = metrics_port if metrics_port is not None else wanted.port
    host = metrics_host or wanted.host
    allow_remote = metrics_allow_remote or wanted.allow_remote
    if port is not None:
        try:
            check_host(host, allow_remote=allow_remote)
        except HarnessError as exc:
            fail(str(exc))

    async def serve() -> None:
        metrics = port is not None
        async with Harness(
            settings, max_concurrent=concurrency, metrics=metrics, live_steps=live_steps
        ) as harness:
            server = await _metrics_server(harness, host, port, allow_remote=allow_remote)
            gc.collect()
            gc.freeze()  # what start-up loaded is never walked again (README, Performance)
            # SIGTERM (systemd, `docker stop`, Kubernetes) stops it as Ctrl-C does: its
            # leases are released, so another worker takes its runs over at once.
            stop = asyncio.Event()
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
            typer.echo(f"worker {harness.owner}: executing runs (Ctrl-C or SIGTERM to stop)")
            if server is not None:
                typer.echo(f"metrics: {server.url}")
            try:
                await stop.wait()
            finally:
                if server is not None:
                    await server.close()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    except HarnessError as exc:
        fail(str(exc))
    typer.echo("worker stopped; its runs will be taken over by the next worker")


async def _metrics_server(
    harness: Harness, host: str, port: int | None, *, allow_remote: bool
) -> MetricsServer | None:
    """Serve the harness's metrics on `host:port`, when a port is given."""
    if port is None or harness.metrics is None:
        return None
    from harness.observability.metrics import CONTENT_TYPE
    from harness.observability.serve import MetricsServer

    server = MetricsServer(
        harness.metrics.render, CONTENT_TYPE, host=host, port=port, allow_remote=allow_remote
    )
    await server.start()
    return server


def _print_event(event: Any, render: Callable[[Any], None], json_output: bool) -> None:
    from harness.core.codec import dumps, event_to_dict

    if json_output:
        typer.echo(dumps(event_to_dict(event)))
    else:
        typer.echo(f"{event.seq:>4} {_when(event.ts)} {event.type}")
        render(event)


async def _decide_if_waiting(
    h: Harness, run_id: str, call_id: str, decide: Callable[[], Awaitable[None]]
) -> None:
    waiting = sorted((p["run_id"], p["call_id"]) for p in await h.pending_approvals(run_id))
    if (run_id, call_id) not in waiting:
        earlier = await h.decision(run_id, call_id)
        if earlier is not None:  # e.g. a racing approve/deny won, and the run went on
            raise already_decided(earlier)
        raise_not_waiting(run_id, call_id, waiting)
    await decide()


def raise_not_waiting(run_id: str, call_id: str, waiting: list[tuple[str, str]]) -> None:
    """Say that a call is not waiting for a decision, and which ones are."""
    from harness.errors import RunError

    listed = ", ".join(f"{r} {c}" for r, c in waiting) or "none"
    raise RunError(
        f"call {call_id} of run {run_id} is not waiting for approval "
        f"(waiting in this run: {listed})"
    )


def _record_dict(record: RunRecord) -> dict[str, Any]:
    from harness.core.codec import usage_to_dict

    return {
        "run_id": record.run_id,
        "agent": record.agent,
        "state": record.state,
        "task": record.task,
        "task_type": record.task_type,
        "resumed_from": record.resumed_from,
        "parent_run_id": record.parent_run_id,
        "root_run_id": record.root,
        "depth": record.depth,
        "model": record.model,
        "created_at": _when(record.created_at),
        "started_at": _when(record.started_at),
        "finished_at": _when(record.finished_at),
        "termination": record.termination,
        "result": record.result,
        **dict(record.result_data or {}),
        "error": record.error,
        "usage": usage_to_dict(record.usage),
        "children_usage": usage_to_dict(record.children_usage),
        "owner": record.owner,
        "events": record.last_seq,
    }


def _when(ts: float | None) -> str | None:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds") if ts else None


@app.command()
def trace(run_id: RunArg, json_output: JsonOpt = False) -> None:
    """Draw a run's trace as a waterfall, from the store (no collector needed)."""
    from harness.observability import span_to_dict, trace_of

    async def read(h: Harness) -> list[TracedSpan]:
        record = await h.get(run_id)
        events = await h.store.events(run_id)
        providers = {name: p.provider for name, p in h.settings.profiles.items()}
        return trace_of(run_id, events, stored_context(record), providers=providers)

    spans = steer(read)
    if json_output:
        typer.echo(json.dumps([span_to_dict(s) for s in spans], indent=2))
        return
    from harness.cli.render import print_waterfall

    print_waterfall(spans)
