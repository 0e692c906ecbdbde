"""`harness serve`: the HTTP API and the dashboard, in a process that also executes runs."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

from harness.cli.app import app, fail
from harness.errors import ConfigError, HarnessError
from harness.observability.serve import is_loopback

if TYPE_CHECKING:
    import socket

    from harness.runtime.settings import Settings

__all__ = ["serve_app"]

SERVER_EXTRA = "harness serve needs the server extra: pip install 'harness[server]'"

serve_app = typer.Typer(
    help="Serve the HTTP API at http://HOST:PORT/api and the dashboard at /, executing runs "
    "like a worker, until interrupted. Every route but /healthz, /readyz, /login and /static "
    "needs a token: [server.tokens] of harness.toml (`harness serve token new`) or "
    "HARNESS_SERVER_TOKEN; without any it serves on the loopback only, with a token made for "
    "this process and printed (docs/server.md).",
    invoke_without_command=True,
)
app.add_typer(serve_app, name="serve")
token_app = typer.Typer(help="Tokens of the API.", no_args_is_help=True)
serve_app.add_typer(token_app, name="token")


@serve_app.callback()
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="The port (0 picks a free one).")
    ] = 8321,
    no_execute: Annotated[
        bool, typer.Option("--no-execute", help="Only serve; runs are executed by workers.")
    ] = False,
    concurrency: Annotated[int, typer.Option(min=1, help="Runs executed at once.")] = 16,
) -> None:
    """Serve the API at http://HOST:PORT/api and the dashboard at /, until interrupted.

    Every route but /healthz, /readyz, /login and /static needs a token: `[server.tokens]`
    of harness.toml (`harness serve token new`) or HARNESS_SERVER_TOKEN. Without any, it
    serves on the loopback only, with a token made for this process and printed.
    """
    if ctx.invoked_subcommand is not None:
        return
    _need_the_extra()
    from harness.runtime.settings import load_settings
    from harness.server._listen import bind
    from harness.server.auth import ENV_TOKEN, new_token

    try:
        settings = load_settings()
    except ConfigError as exc:
        fail(str(exc))
    env = dict(os.environ)
    made = None
    if not settings.server.tokens and not env.get(ENV_TOKEN):
        if not is_loopback(host):
            fail(
                f"refusing to listen on {host}, beyond the loopback, with no tokens: anyone "
                "who reaches it could steer your agents. Add one to [server.tokens] of "
                f"{settings.home / 'harness.toml'} (`harness serve token new --role admin`) "
                f"or set {ENV_TOKEN}"
            )
        made = env[ENV_TOKEN] = new_token()
    try:
        sock = bind(host, port)
    except ConfigError as exc:
        fail(str(exc))
    _run(settings, sock, env, made, execute=not no_execute, concurrency=concurrency)


def _need_the_extra() -> None:
    """Fail, saying how to install it, when FastAPI or uvicorn is missing."""
    import importlib

    try:
        for module in ("harness.server.app", "harness.server._listen"):
            importlib.import_module(module)
    except ModuleNotFoundError as exc:
        fail(f"{SERVER_EXTRA} ({exc.name} is missing)")


def _run(
    settings: Settings,
    sock: socket.socket,
    env: dict[str, str],
    made: str | None,
    *,
    execute: bool,
    concurrency: int,
) -> None:
    import asyncio
    import gc
    import logging

    from harness.runtime.harness import Harness
    from harness.server._listen import listen
    from harness.server.app import create_app
    from harness.server.middleware import ACCESS_LOG

    # Warnings and errors of every logger, and the access lines (INFO): never the INFO lines
    # of the libraries below, such as the HTTP client's, which name each request's full URL
    # (a model's address may hold a password or a key).
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    ACCESS_LOG.setLevel(logging.INFO)
    host, port = sock.getsockname()[:2]
    url = f"http://{host if ':' not in host else f'[{host}]'}:{port}"

    async def go() -> None:
        async with Harness(
            settings,
            execute=execute,
            max_concurrent=concurrency,
            metrics=True,
            live_steps=settings.server.live_steps,
        ) as h:
            server = create_app(h, env=env)
            gc.collect()
            gc.freeze()  # what start-up loaded is never walked again, as in `harness worker`
            what = "executing runs" if execute else "not executing runs (--no-execute)"
            typer.echo(f"harness serve {h.owner}: {url} ({what}; Ctrl-C to stop)")
            if made is not None:
                typer.echo(f"no tokens configured: this process's admin token is {made}")
            await listen(server, sock, on_exit=server.streams.close_all)

    try:
        asyncio.run(go())
    except HarnessError as exc:
        fail(str(exc))
    finally:
        sock.close()
    typer.echo("server stopped; its runs will be taken over by the next worker")


@token_app.command("new")
def token_new(
    role: Annotated[str, typer.Option(help="read, operate or admin.")] = "read",
    name: Annotated[str | None, typer.Option(help="Whom it is for (default: a new name).")] = None,
) -> None:
    """Make a token: print it once, and the line that lets harness.toml accept it."""
    import re
    import secrets

    from harness.runtime.server_config import ROLES

    if role not in ROLES:
        fail(f"--role: no role {role!r}; use one of {', '.join(ROLES)}")
    label = name or f"token-{secrets.token_hex(3)}"
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", label):
        fail(f"--name: {label!r}: use letters, digits, '-' and '_' (at most 64)")
    _need_the_extra()
    from harness.server.auth import hash_token, new_token

    token = new_token()
    typer.echo(f"token (shown once; give it to {label}): {token}")
    typer.echo("add to harness.toml:")
    typer.echo(f'[server.tokens.{label}]\nsha256 = "{hash_token(token)}"\nrole = "{role}"')
