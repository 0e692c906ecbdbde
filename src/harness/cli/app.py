"""The `harness` command line: the only module that imports typer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
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

DEFAULT_TOOLS = "bash"
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
        )
    except ConfigError as exc:
        _fail(str(exc))
    failures: list[RunEvent] = []
    renderer = JsonRenderer() if json_output else LiveRenderer()

    def on_event(event: RunEvent) -> None:
        renderer(event)
        if event.type == "run_failed":
            failures.append(event)

    result = asyncio.run(_run(Harness(settings, base_url=base_url), agent, task, stream, on_event))
    if failures:
        _explain_failure(failures[-1], json_output)
    raise typer.Exit(0 if result.ok else 1)


@app.command()
def demo() -> None:
    """Run a realistic multi-step scenario with a scripted model (no LLM needed)."""
    from harness.cli.demo import run_demo

    raise typer.Exit(run_demo())


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
