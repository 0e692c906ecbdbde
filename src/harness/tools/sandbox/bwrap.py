"""The bubblewrap command line of research/sandbox.md §4.2, built as data.

Options go through `--args FD` so that host paths (the workspace) do not show in `ps`;
only `bwrap --args N -- /bin/bash ... -c COMMAND` stays on the visible command line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ToolError

__all__ = [
    "BWRAP_ENV",
    "GROUP",
    "HOSTS",
    "MAX_COMMAND_BYTES",
    "PASSWD",
    "BwrapFds",
    "bwrap_options",
    "check_command",
    "check_env",
    "command_argv",
    "encode_args",
]

BWRAP_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
"""The whole environment of bwrap itself: its pid 1 keeps it, readable in `/proc/1/environ`."""

PASSWD = (
    b"sandbox:x:1000:1000:sandbox:/workspace:/bin/bash\n"
    b"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
)
"""`/etc/passwd` inside, so that `whoami`, git and ssh find a user entry."""
GROUP = b"sandbox:x:1000:\nnogroup:x:65534:\n"
"""`/etc/group` inside."""
HOSTS = b"127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n"
"""`/etc/hosts` inside when the network is off, so `localhost` still resolves."""

MAX_COMMAND_BYTES = 128 * 1024 - 1
"""The kernel's limit for one argv string (MAX_ARG_STRLEN), less the final NUL."""

_COMMAND_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/workspace",
    "LANG": "C.UTF-8",
    "TMPDIR": "/tmp",
}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ETC_READ_ONLY = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/localtime",
)
_ETC_NETWORK = ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf")


@dataclass(frozen=True, kw_only=True)
class BwrapFds:
    """File descriptors, open in the harness and passed to bwrap, that its options name."""

    passwd: int
    """Holds `PASSWD`."""
    group: int
    """Holds `GROUP`."""
    hosts: int
    """Holds `HOSTS`."""
    info: int
    """The write end of a pipe on which bwrap reports the pid of its child."""
    seccomp: int
    """Holds the BPF program that forbids setuid and setgid bits (`seccomp.setid_filter`)."""


def bwrap_options(
    *,
    fds: BwrapFds,
    workspace: Path | None,
    network: bool,
    env: Mapping[str, str],
    tmp_bytes: int,
    hidden: Sequence[str] = (),
) -> list[str]:
    """The bwrap options that isolate one command; they go through `--args`.

    Args:
        fds: The descriptors the options refer to.
        workspace: Host directory bound read-write at `/workspace`; None binds nothing.
        network: Keep the host's network namespace (egress) instead of an empty one.
        env: Extra variables for the command, on top of PATH, HOME, LANG and TMPDIR.
        tmp_bytes: Size of the private `/tmp`.
        hidden: Workspace directories, relative, each covered by an empty read-only tmpfs.

    Returns:
        The options, without the command.
    """
    return [
        *_isolation(network),
        *_environment(env),
        *_filesystem(fds, network, tmp_bytes),
        *_workspace(workspace, hidden),
        "--info-fd", str(fds.info),
        "--seccomp", str(fds.seccomp),
        # Last: earlier, the read-only root would stop the binds above from creating files.
        "--remount-ro", "/",
    ]  # fmt: skip


def _isolation(network: bool) -> list[str]:
    options = [
        "--unshare-all", "--unshare-user", "--disable-userns",
        "--uid", "1000", "--gid", "1000", "--cap-drop", "ALL",
        "--die-with-parent", "--new-session", "--hostname", "sandbox",
    ]  # fmt: skip
    return [*options, "--share-net"] if network else options


def _environment(env: Mapping[str, str]) -> list[str]:
    options = ["--clearenv"]
    for name, value in {**_COMMAND_ENV, **env}.items():
        options += ["--setenv", name, value]
    return options


def _filesystem(fds: BwrapFds, network: bool, tmp_bytes: int) -> list[str]:
    options = [
        "--ro-bind", "/usr", "/usr",
        "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
        "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
    ]  # fmt: skip
    for path in _ETC_READ_ONLY + (_ETC_NETWORK if network else ()):
        options += ["--ro-bind-try", path, path]
    options += ["--ro-bind-data", str(fds.passwd), "/etc/passwd"]
    options += ["--ro-bind-data", str(fds.group), "/etc/group"]
    if not network:
        options += ["--ro-bind-data", str(fds.hosts), "/etc/hosts"]
    options += ["--proc", "/proc", "--dev", "/dev"]
    return [*options, "--size", str(tmp_bytes), "--tmpfs", "/tmp"]


def _workspace(workspace: Path | None, hidden: Sequence[str]) -> list[str]:
    if workspace is None:
        return ["--chdir", "/"]
    options = ["--bind", str(workspace), "/workspace"]
    for relative in hidden:
        inside = f"/workspace/{relative}"
        options += ["--size", "4096", "--tmpfs", inside, "--remount-ro", inside]
    return [*options, "--chdir", "/workspace"]


def command_argv(bwrap: str, args_fd: int, command: str) -> list[str]:
    """The visible bwrap command line: options from `args_fd`, then bash running `command`."""
    bash = ["/bin/bash", "--noprofile", "--norc", "-c", command]
    return [bwrap, "--args", str(args_fd), "--", *bash]


def encode_args(options: Sequence[str]) -> bytes:
    """Options in the NUL-separated form that `bwrap --args` reads."""
    return b"".join(option.encode() + b"\0" for option in options)


def check_command(command: str) -> None:
    """Refuse a command that cannot be passed as one argv string.

    Raises:
        ToolError: The command holds a NUL byte or is longer than `MAX_COMMAND_BYTES`.
    """
    if "\0" in command:
        raise ToolError("the command contains a NUL byte", hint="remove the NUL byte")
    if len(command.encode(errors="surrogateescape")) > MAX_COMMAND_BYTES:
        raise ToolError(
            f"the command is longer than {MAX_COMMAND_BYTES} bytes",
            hint="write the script to a file in the workspace, then run that file",
        )


def check_env(env: Mapping[str, str]) -> None:
    """Refuse environment variables that bwrap cannot set.

    Raises:
        ToolError: A name is not a shell identifier, or a value holds a NUL byte.
    """
    for name, value in env.items():
        if not _ENV_NAME.fullmatch(name):
            raise ToolError(f"invalid environment variable name {name!r}", hint="use [A-Za-z_0-9]")
        if "\0" in value:
            raise ToolError(f"environment variable {name} contains a NUL byte", hint="remove it")
