"""The `harness` command line: the only module that imports typer."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from harness.agent.spec import AgentSpec
from harness.core.results import RunResult
from harness.errors import ConfigError, HarnessError, StoreError
from harness.runtime._agents_config import Overrides
from harness.runtime.harness import Harness

if TYPE_CHECKING:
    # `harness --help` does not need these: loaded by the commands that use them.
    from harness.core.events import RunEvent, RunFailed
    from harness.runtime.settings import Settings

__all__ = ["app", "click_command", "load_commands", "main"]

app = typer.Typer(
    name="harness",
    help="Run LLM agents that keep working when models misbehave and tools fail.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Help texts are Markdown, not Rich markup: `[agents.NAME]` and `[runtime]` are
    # harness.toml tables, which Rich's markup takes for tags and drops (Markdown shows
    # them). Every sub-command inherits this (tests/cli/test_cli_help.py).
    rich_markup_mode="markdown",
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
    agent_name: Annotated[
        str | None,
        typer.Option("--agent", "-a", help="An agent of harness.toml ([agents.NAME]) by name."),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="A profile name or openai:MODEL_NAME.")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="Point the model at any OpenAI-compatible server.")
    ] = None,
    tools: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated tools of the registry: built-in tools, [tools.NAME] tools, "
            f"tag:TAG, SERVER.TOOL, a glob (fs_*); or 'none' (default: {DEFAULT_TOOLS})."
        ),
    ] = None,
    max_steps: Annotated[
        int | None, typer.Option(min=1, help="Stop after this many steps.")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option(min=1, help="Stop once the run used this many tokens.")
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option(min=0, help="Stop once the run cost this many US dollars."),
    ] = None,
    max_seconds: Annotated[
        float | None,
        typer.Option(min=0, help="Stop once the run has taken this long."),
    ] = None,
    max_tool_calls: Annotated[
        int | None, typer.Option(min=0, help="Stop once the run made this many tool calls.")
    ] = None,
    strategy: Annotated[
        str | None,
        typer.Option(help="react or plan_execute (default: defaults.strategy in harness.toml)."),
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
    task_type: Annotated[
        str | None,
        typer.Option(help="A label for this kind of task (e.g. refund): groups runs in cost."),
    ] = None,
    experiment_key: Annotated[
        str | None,
        typer.Option(help="The key (e.g. a user id) that picks an experiment's variant."),
    ] = None,
    detach: Annotated[
        bool, typer.Option(help="Queue the run for `harness worker`, print its id and exit.")
    ] = False,
    json_output: Annotated[
        bool,
        typer.Option("--json", help="Print one JSON event per line instead of a readable account."),
    ] = False,
) -> None:
    """Run an agent on TASK in this process and print what it does."""
    import asyncio

    from harness.cli.render import JsonRenderer, LiveRenderer
    from harness.core.events import RunFailed
    from harness.runtime.settings import load_settings

    budgets = {
        "max_steps": max_steps,
        "max_tokens": max_tokens,
        "max_cost_usd": max_cost,
        "max_seconds": max_seconds,
        "max_tool_calls": max_tool_calls,
    }
    own = {"--tools": tools, "--workspace": workspace, "--mcp": mcp}
    own |= {"--network": network or None, "--unsandboxed": unsandboxed or None}
    try:
        _check_task_type(task_type)
        settings = load_settings()
        named = agent_name or _task_type_agent(settings, task_type)
        if named is not None:
            _check_named(named, settings, {k: v for k, v in own.items() if v})
        explicit = _explicit(model, strategy, budgets)
        agent = named or AgentSpec(
            name="cli",
            model=settings.default_model,
            base_url=base_url,
            tools=_tool_names(tools or DEFAULT_TOOLS, settings),
            limits=settings.default_limits,
            workspace=workspace.resolve() if workspace else None,
            network=network,
            allow_unsandboxed=unsandboxed,
            mcp=tuple(mcp or ()),
            approvals=settings.approvals,
            strategy=settings.default_strategy,
        )
        _check_model(model, settings, base_url)
    except ConfigError as exc:
        fail(str(exc))
    unknown = [name for name in mcp or () if name not in settings.mcp_servers]
    if unknown:
        known = ", ".join(sorted(settings.mcp_servers)) or "none"
        fail(
            f"no MCP server named {unknown[0]!r} in {settings.home / 'harness.toml'} "
            f"(configured: {known}); add an [mcp.{unknown[0]}] table with a command or url"
        )
    job = _Task(text=task, task_type=task_type, experiment_key=experiment_key, overrides=explicit)
    if detach:
        typer.echo(_submit(settings, agent, job))
        return
    failures: list[RunFailed] = []
    renderer = JsonRenderer() if json_output else LiveRenderer()

    def on_event(event: RunEvent) -> None:
        renderer(event)
        if isinstance(event.payload, RunFailed):
            failures.append(event.payload)

    try:
        result = asyncio.run(
            _run(
                Harness(settings, base_url=base_url, adopt=False),
                agent,
                job,
                stream,
                on_event,
            )
        )
    except StoreError as exc:  # the run exists but could not go on: it did not succeed
        fail(str(exc), code=1)
    except HarnessError as exc:
        fail(str(exc))
    if failures:
        _explain_failure(failures[-1], json_output)
    raise typer.Exit(0 if result.ok else 1)


workspace_app = typer.Typer(help="Workspaces for agents.", no_args_is_help=True)
app.add_typer(workspace_app, name="workspace")


@workspace_app.command("new")
def workspace_new(
    parent: Annotated[
        Path | None,
        typer.Option(help="Where to make it (default: /tmp/harness-workspaces)."),
    ] = None,
) -> None:
    """Make a fresh, empty workspace the sandbox can use, and print its path."""
    from harness.tools.sandbox import make_workspace

    try:
        typer.echo(make_workspace(parent.absolute() if parent else None))
    except (ConfigError, OSError) as exc:
        fail(f"cannot make a workspace: {exc}")


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


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class _Task:
    """What `harness run` asks: the task, its type, and the values given as flags."""

    text: str
    """The task."""
    task_type: str | None
    """Its label, if given."""
    experiment_key: str | None = None
    """`--experiment-key`."""
    overrides: Overrides | None = None
    """`--model`, `--strategy` and the budgets given: they win over every level."""


async def _run(
    harness: Harness,
    agent: AgentSpec | str,
    task: _Task,
    stream: bool,
    renderer: Callable[[RunEvent], None],
) -> RunResult:
    async with harness:
        return await harness.run(
            agent,
            task.text,
            stream=stream,
            on_event=renderer,
            task_type=task.task_type,
            experiment_key=task.experiment_key,
            overrides=task.overrides,
        )


def _submit(settings: Settings, agent: AgentSpec | str, task: _Task) -> str:
    async def go() -> str:
        async with Harness(settings, execute=False) as harness:
            return await harness.submit(
                agent,
                task.text,
                task_type=task.task_type,
                experiment_key=task.experiment_key,
                overrides=task.overrides,
            )

    import asyncio

    try:
        return asyncio.run(go())
    except HarnessError as exc:
        fail(str(exc))


def _check_task_type(task_type: str | None) -> None:
    """Raises `ConfigError` naming `--task-type` when it is not a valid label."""
    from harness.core.ids import check_task_type

    try:
        check_task_type(task_type)
    except ConfigError as exc:
        raise ConfigError(f"--task-type: {exc}") from exc


def _tool_names(option: str, settings: Settings) -> list[str]:
    """The tools `--tools` picks from the registry, as an agent's `tools` names them.

    Raises:
        ConfigError: A name that is no tool, one of an unknown MCP server, or one named
            twice.
    """
    from harness.runtime._settings_agents import pick_tools

    names = [name.strip() for name in option.split(",") if name.strip()]
    if names == ["none"]:
        return []
    return pick_tools(names, settings.tools, settings.mcp_servers, "--tools")


def _explicit(
    model: str | None, strategy: str | None, budgets: dict[str, int | float | None]
) -> Overrides | None:
    """The values given as flags, which win over the file's levels; `None` when none is."""
    limits = {k: v for k, v in budgets.items() if v is not None}
    if model is None and strategy is None and not limits:
        return None
    if strategy is not None:
        from harness.agent.strategies import strategy_names

        if strategy not in strategy_names():
            raise ConfigError(
                f"--strategy: unknown strategy {strategy!r}; use one of "
                f"{', '.join(strategy_names())}"
            )
    return Overrides(model=model, strategy=strategy, limits=limits)


def _task_type_agent(settings: Settings, task_type: str | None) -> str | None:
    """The agent `[task_types.NAME]` names for `task_type`, if it names one."""
    kind = settings.task_types.get(task_type or "")
    return kind.agent if kind is not None else None


def _check_named(name: str, settings: Settings, given: dict[str, object]) -> None:
    """An agent of the file (or an entry point) brings its own tools and workspace.

    Raises:
        ConfigError: No agent has that name, or a flag that only the ad-hoc agent takes.
    """
    from harness.runtime._catalog import entry_point_names

    if name not in settings.agents and name not in entry_point_names():
        known = ", ".join(sorted({*settings.agents, *entry_point_names()})) or "none"
        raise ConfigError(
            f"--agent: no agent named {name!r} (known: {known}); define [agents.{name}] in "
            f"{settings.home / 'harness.toml'}"
        )
    if given:
        raise ConfigError(
            f"{', '.join(given)}: agent {name!r} brings its own tools and workspace "
            f"([agents.{name}] in harness.toml); these flags are for runs without --agent"
        )


def _check_model(model: str | None, settings: Settings, base_url: str | None) -> None:
    """Fail on a model name or server address no run could use, before a run is stored.

    Raises:
        ConfigError: What is wrong, naming the option.
    """
    from harness.gateway.profiles import resolve_profile

    try:
        resolve_profile(model or settings.default_model, settings.profiles, base_url=base_url)
    except ConfigError as exc:
        option = "--base-url" if base_url and "base_url" in str(exc) else "--model"
        raise ConfigError(f"{option}: {exc}") from exc


def _explain_failure(failed: RunFailed, json_output: bool) -> None:
    from harness.cli.render import print_error, print_hint

    hint = MODEL_HINT if failed.error_type in _MODEL_ERRORS else None
    if json_output:
        print_error(str(failed.error), hint=hint)
    elif hint:
        print_hint(hint)


def fail(message: str, *, code: int = 2) -> NoReturn:
    """Print `message` as one error line and exit with `code` (2: a usage mistake)."""
    from harness.cli.render import print_error

    print_error(message)
    raise typer.Exit(code)


def main() -> None:
    """Entry point of the `harness` console script."""
    load_commands()
    app()


def click_command() -> Any:
    """Every command of `harness`, as the Click command Typer builds (help texts, params)."""
    load_commands()
    return typer.main.get_command(app)


def load_commands() -> None:
    """Add the commands that live in modules of their own to `app`."""
    import importlib

    for commands in (
        "agents",
        "cost",
        "experiments",
        "models",
        "runs",
        "send",
        "serve",
        "stats",
        "temporal",
        "tools",
        "tree",
        "triggers",
    ):
        importlib.import_module(f"harness.cli.{commands}")  # each adds its commands to `app`
