"""`Sandbox`: run a bash command in bubblewrap, as an unprivileged uid, from async code."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar, cast

from harness.tools.sandbox.bwrap import check_command, check_env
from harness.tools.sandbox.errors import SandboxUnavailable
from harness.tools.sandbox.limits import DEFAULT_LIMITS, SandboxLimits
from harness.tools.sandbox.probe import SandboxStatus, probe_sandbox, resolve_programs, run_as
from harness.tools.sandbox.result import SandboxResult
from harness.tools.sandbox.runner import Job, RunSpec
from harness.tools.sandbox.workspace import (
    DEFAULT_UID,
    check_workspace,
    make_workspace,
    prepare_workspace,
)

__all__ = ["Sandbox"]

_T = TypeVar("_T")


class Sandbox:
    """Runs `bash --noprofile --norc -c COMMAND` in bubblewrap (research/sandbox.md §4.2).

    When the harness runs as root, bwrap runs as host uid `uid` (nobody by default); as any
    other user, it runs as that user. The command sees the workspace at `/workspace`, a
    read-only `/usr`, a private `/tmp`, no network unless asked, and none of the harness's
    environment. When no sandbox works here, `run` raises `SandboxUnavailable`: it never
    falls back to running the command bare.

    Concurrent calls share the uid's RLIMIT_NPROC; give each concurrent slot its own uid if
    that matters.

    Args:
        bwrap: The bwrap executable; found on PATH by default.
        prlimit: The prlimit executable; found on PATH by default.
        uid: Host uid (and gid) for the commands when the harness runs as root.
    """

    def __init__(
        self, *, bwrap: str | None = None, prlimit: str | None = None, uid: int = DEFAULT_UID
    ) -> None:
        self.bwrap, self.prlimit = resolve_programs(bwrap, prlimit)
        self.uid = uid

    def probe(self) -> SandboxStatus:
        """Whether this sandbox works here (cached per process); blocks for ~20 ms once."""
        return probe_sandbox(bwrap=self.bwrap, prlimit=self.prlimit, uid=self.uid)

    def make_workspace(self, parent: Path | None = None) -> Path:
        """Create an empty workspace for this sandbox; see `make_workspace`."""
        return make_workspace(parent, uid=self.uid)

    def prepare_workspace(self, path: Path) -> Path:
        """Hand `path` (and its content) to this sandbox's uid; see `prepare_workspace`."""
        return prepare_workspace(path, uid=self.uid)

    async def run(
        self,
        command: str,
        *,
        workspace: Path,
        limits: SandboxLimits = DEFAULT_LIMITS,
        network: bool = False,
        env: Mapping[str, str] | None = None,
        hidden: Sequence[str] = (),
    ) -> SandboxResult:
        """Run `command` with bash in the sandbox and return what it did.

        Runs until the command and every process it started have ended, the wall-clock
        timeout passes, or the output cap is hit; in the last two cases everything is killed.
        If the calling task is cancelled, the sandbox is killed before this returns.

        Args:
            command: A bash script.
            workspace: Host directory mounted read-write at `/workspace` (the working
                directory); made by `make_workspace` or `prepare_workspace`.
            limits: Resource limits.
            network: Share the host's network (egress, and every host loopback service).
            env: Extra environment variables for the command.
            hidden: Directories of the workspace, relative to it, that the command must
                not see: each that exists is covered by an empty read-only tmpfs.

        Returns:
            Exit status, flags and the cleaned head and tail of stdout and stderr.

        Raises:
            SandboxUnavailable: No working sandbox here; the hint says how to fix it.
            ToolError: The command or env cannot be passed (NUL byte, too long).
            ConfigError: The workspace is not usable by the sandbox uid.
        """
        check_command(command)
        check_env(env or {})
        spec = await asyncio.to_thread(
            self._spec, command, workspace, limits, network, dict(env or {}), tuple(hidden)
        )
        job = Job(spec)
        return await _in_thread(job.run, on_cancel=job.cancel)

    def _spec(
        self,
        command: str,
        workspace: Path,
        limits: SandboxLimits,
        network: bool,
        env: dict[str, str],
        hidden: tuple[str, ...],
    ) -> RunSpec:
        status = self.probe()
        if not status.available:
            raise SandboxUnavailable(f"no sandbox available: {status.detail}", hint=status.fix)
        mount = check_workspace(workspace, uid=self.uid)
        return RunSpec(
            bwrap=self.bwrap,
            prlimit=self.prlimit,
            run_as=run_as(self.uid),
            command=command,
            workspace=mount.path,
            idmap=mount.idmap,
            mount_point=mount.mount_point,
            identity=mount.identity,
            limits=limits,
            network=network,
            env=env,
            hidden=tuple(rel for rel in hidden if _is_directory(mount.path, rel)),
        )


def _is_directory(workspace: Path, relative: str) -> bool:
    # Checked by the harness, so a link the command planted there is not followed below.
    path = workspace / relative
    return not path.is_symlink() and path.is_dir()


async def _in_thread(work: Callable[[], _T], *, on_cancel: Callable[[], None]) -> _T:
    """Run blocking `work` in a thread of its own; if cancelled, call `on_cancel` and wait.

    Not the loop's default executor: its few workers would be held by long commands.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[_T] = loop.create_future()

    def settle(result: _T | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is None:
            done.set_result(cast(_T, result))
        else:
            done.set_exception(error)

    def target() -> None:
        try:
            result = work()
        except BaseException as exc:
            _call_soon_threadsafe(loop, settle, None, exc)
        else:
            _call_soon_threadsafe(loop, settle, result, None)

    threading.Thread(target=target, name="harness-sandbox", daemon=True).start()
    try:
        return await asyncio.shield(done)
    except asyncio.CancelledError:
        on_cancel()
        # The killed command is cleaned up within about a second; don't leave it half-reaped.
        await asyncio.wait([done])
        raise


def _call_soon_threadsafe(
    loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: object
) -> None:
    # The loop is closed only if its owner abandoned this call; the result is then nobody's.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(callback, *args)
