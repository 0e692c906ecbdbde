"""The `harness` command line: the only module that imports typer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from harness.agent.spec import AgentSpec
from harness.core.events import RunEvent
from harness.core.results import RunResult
from harness.core.usage import Limits
from harness.errors import ConfigError
from harness.runtime.harness import Harness
from harness.runtime.settings import load_settings

__all__ = ["app", "main"]

app = typer.Typer(
    name="harness",
    help="Run LLM agents that keep working when models misbehave and tools fail.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

DEFAULT_TOOLS = "bash,read_file,write_file,edit_file,list_dir,search"
MODEL_HINT = (
    "To use a local model, start llama.cpp:  llama-server -m MODEL.gguf --jinja --port 8080\n"
    "or name another one:  harness run --model openai:MODEL_NAME --base-url http://HOST:PORT/v1 "
    "...\nor add a [models.NAME] profile to HARNESS_HOME/harness.toml."
)
_MODEL_ERRORS = (
    "ModelConnectionError",
    "ModelTimeoutError",
    "ModelAuthenticationError",
    "ModelNotFoundError",
)


@app.command()
def run(
    task: Annotated[str, typer.Argument(help="What the agent should do.")],
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="A profile name or openai:MODEL_NAME.")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="Point the model at any OpenAI-compatible server.")
    ] = None,
    tools: Annotated[
        str, typer.Option(help="Comma-separated built-in tools, or 'none'.")
    ] = DEFAULT_TOOLS,
    max_steps: Annotated[
        int | None, typer.Option(min=1, help="Stop after this many steps.")
    ] = None,
    workspace: Annotated[
        Path | None,
        typer.Option(help="The directory the tools work in (default: the current one)."),
    ] = None,
    network: Annotated[
        bool, typer.Option(help="Give bash the network; each command then needs approval.")
    ] = False,
    unsandboxed: Annotated[
        bool,
        typer.Option(
            "--unsandboxed",
            help="If no sandbox works here, run bash on the host; every command needs approval.",
        ),
    ] = False,
    mcp: Annotated[
        list[str] | None,
        typer.Option("--mcp", help="Give the agent the tools of this [mcp.NAME] server."),
    ] = None,
    stream: Annotated[bool, typer.Option(help="Stream the model's text as it arrives.")] = False,
    json_output: Annotated[
        bool,
        typer.Option("--json", help="Print one JSON event per line instead of a readable account."),
    ] = False,
) -> None:
    """Run an agent on TASK in this process and print what it does."""
    from harness.cli.render import JsonRenderer, LiveRenderer

    try:
        settings = load_settings()
        limits = Limits(max_steps=max_steps) if max_steps else Limits()
        agent = AgentSpec(
            name="cli",
            model=model or settings.default_model,
            tools=_tool_names(tools),
            limits=limits,
            workspace=workspace.resolve() if workspace else None,
            network=network,
            allow_unsandboxed=unsandboxed,
            mcp=tuple(mcp or ()),
            approvals=settings.approvals,
        )
    except ConfigError as exc:
        _fail(str(exc))
    failures: list[RunEvent] = []
    renderer = JsonRenderer() if json_output else LiveRenderer()

    def on_event(event: RunEvent) -> None:
        renderer(event)
        if event.type == "run_failed":
            failures.append(event)

    try:
        result = asyncio.run(
            _run(Harness(settings, base_url=base_url), agent, task, stream, on_event)
        )
    except ConfigError as exc:
        _fail(str(exc))
    if failures:
        _explain_failure(failures[-1], json_output)
    raise typer.Exit(0 if result.ok else 1)


@app.command()
def demo() -> None:
    """Run a realistic multi-step scenario with a scripted model (no LLM needed)."""
    from harness.cli.demo import run_demo

    raise typer.Exit(run_demo())


@app.command()
def approve(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="The run id.")],
    call_id: Annotated[str, typer.Argument(metavar="CALL", help="The tool call id.")],
) -> None:
    """Let a tool call that is waiting for approval run."""
    _decide(run_id, call_id, approved=True, reason=None)


@app.command()
def deny(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="The run id.")],
    call_id: Annotated[str, typer.Argument(metavar="CALL", help="The tool call id.")],
    reason: Annotated[str, typer.Option(help="Why; the model is told.")] = "denied by the user",
) -> None:
    """Refuse a tool call that is waiting for approval; the model gets the reason."""
    _decide(run_id, call_id, approved=False, reason=reason)


@app.command()
def approvals() -> None:
    """List the tool calls waiting for approval."""
    from harness.runtime.approvals import ApprovalInbox

    pending = ApprovalInbox(load_settings().home).pending()
    for request in pending:
        typer.echo(f"{request.run_id} {request.call_id} {request.tool} {request.arguments}")
    if not pending:
        typer.echo("No tool call is waiting for approval.")


@app.command()
def audit(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="The run id.")],
    json_output: Annotated[bool, typer.Option("--json", help="One JSON record per line.")] = False,
) -> None:
    """Show the audit record of every tool call of a run."""
    from harness.tools.audit import JsonlAuditLog

    records = JsonlAuditLog(load_settings().home / "audit.jsonl").for_run(run_id)
    for record in records:
        if json_output:
            typer.echo(record.to_json())
        else:
            typer.echo(
                f"{record.call_id} {record.tool} {record.status} decision={record.decision} "
                f"by={record.decided_by} sandbox={record.sandbox or '-'} "
                f"exit={record.exit_code} {record.duration_s:.3f}s {record.arguments[:80]}"
            )
    if not records:
        _fail(f"no audit records for run {run_id}")


workspace_app = typer.Typer(help="Workspaces the bash sandbox can use.", no_args_is_help=True)
app.add_typer(workspace_app, name="workspace")


@workspace_app.command("new")
def workspace_new() -> None:
    """Create an empty workspace owned by the sandbox user and print its path."""
    from harness.tools.sandbox import make_workspace

    typer.echo(make_workspace())


def _decide(run_id: str, call_id: str, *, approved: bool, reason: str | None) -> None:
    import getpass

    from harness.runtime.approvals import ApprovalInbox

    try:
        request = ApprovalInbox(load_settings().home).decide(
            run_id, call_id, approved=approved, by=f"user:{getpass.getuser()}", reason=reason
        )
    except ConfigError as exc:
        _fail(str(exc))
    verb = "approved" if approved else "denied"
    typer.echo(f"{verb}: {request.tool} {request.arguments} (run {run_id}, call {call_id})")


@app.command()
def version() -> None:
    """Print the version of harness."""
    from harness import __version__

    typer.echo(__version__)


async def _run(
    harness: Harness,
    agent: AgentSpec,
    task: str,
    stream: bool,
    renderer: Callable[[RunEvent], None],
) -> RunResult:
    async with harness:
        return await harness.run(agent, task, stream=stream, on_event=renderer)


def _tool_names(option: str) -> list[str]:
    names = [name.strip() for name in option.split(",") if name.strip()]
    return [] if names == ["none"] else names


def _explain_failure(event: RunEvent, json_output: bool) -> None:
    from harness.cli.render import print_error, print_hint

    hint = MODEL_HINT if event.payload.get("error_type") in _MODEL_ERRORS else None
    if json_output:
        print_error(str(event.payload.get("error")), hint=hint)
    elif hint:
        print_hint(hint)


def _fail(message: str) -> NoReturn:
    from harness.cli.render import print_error

    print_error(message)
    raise typer.Exit(2)


def main() -> None:
    """Entry point of the `harness` console script."""
    app()
