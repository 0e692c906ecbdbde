"""The limits and the bwrap command line, as data, without running anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ConfigError, ToolError
from harness.tools.sandbox import DEFAULT_LIMITS, SandboxLimits
from harness.tools.sandbox.bwrap import (
    MAX_COMMAND_BYTES,
    BwrapFds,
    bwrap_options,
    check_command,
    check_env,
    command_argv,
    encode_args,
)
from harness.tools.sandbox.limits import prlimit_argv

FDS = BwrapFds(passwd=5, group=6, hosts=7, info=8, seccomp=9)


def options(*, network: bool = False, env: dict[str, str] | None = None) -> list[str]:
    return bwrap_options(
        fds=FDS, workspace=Path("/srv/ws"), network=network, env=env or {}, tmp_bytes=1024
    )


def test_default_limits_match_the_research() -> None:
    assert DEFAULT_LIMITS == SandboxLimits(
        cpu_s=20, data_bytes=2 << 30, as_bytes=8 << 30, fsize_bytes=64 << 20, nproc=64,
        nofile=256, tmp_bytes=64 << 20, wall_s=120, output_cap_bytes=8 << 20,
        head_bytes=32 << 10, tail_bytes=32 << 10,
    )  # fmt: skip


def test_prlimit_prefix() -> None:
    assert prlimit_argv("/usr/bin/prlimit", SandboxLimits(cpu_s=2, nproc=9)) == [
        "/usr/bin/prlimit", "--cpu=2:3", f"--data={2 << 30}", f"--as={8 << 30}",
        f"--fsize={64 << 20}", "--nproc=9", "--nofile=256", "--core=0", "--",
    ]  # fmt: skip


@pytest.mark.parametrize("field", ["cpu_s", "nproc", "wall_s", "tmp_bytes"])
def test_limits_must_be_positive(field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        SandboxLimits(**{field: 0})


def test_head_and_tail_must_fit_under_the_cap() -> None:
    with pytest.raises(ConfigError, match="output_cap_bytes"):
        SandboxLimits(output_cap_bytes=1000, head_bytes=600, tail_bytes=600)


def test_isolation_flags_and_read_only_root_last() -> None:
    args = options()
    for flag in ("--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
                 "--new-session", "--clearenv"):  # fmt: skip
        assert flag in args
    assert args[args.index("--uid") + 1] == "1000"
    assert args[args.index("--cap-drop") + 1] == "ALL"
    assert args[-2:] == ["--remount-ro", "/"]
    assert "--share-net" not in args
    assert args[args.index("--bind") : args.index("--bind") + 3] == [
        "--bind", "/srv/ws", "/workspace",
    ]  # fmt: skip
    assert args[args.index("--size") : args.index("--size") + 4] == [
        "--size", "1024", "--tmpfs", "/tmp",
    ]  # fmt: skip
    assert args[args.index("--info-fd") + 1] == "8"
    assert args[args.index("--seccomp") + 1] == "9"


def test_network_shares_the_namespace_and_binds_resolver_files() -> None:
    args = options(network=True)
    assert "--share-net" in args
    assert ["--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"] == args[
        args.index("/etc/resolv.conf") - 1 : args.index("/etc/resolv.conf") + 2
    ]
    assert "/etc/resolv.conf" not in options()


def test_command_env_is_minimal_plus_extras() -> None:
    args = options(env={"FOO": "bar", "HOME": "/tmp"})
    pairs = {args[i + 1]: args[i + 2] for i, arg in enumerate(args) if arg == "--setenv"}
    assert pairs == {
        "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
        "TMPDIR": "/tmp", "FOO": "bar",
    }  # fmt: skip


def test_visible_command_line_hides_options() -> None:
    argv = command_argv("/usr/bin/bwrap", 9, "echo hi")
    assert argv == [
        "/usr/bin/bwrap", "--args", "9", "--", "/bin/bash", "--noprofile", "--norc", "-c",
        "echo hi",
    ]  # fmt: skip
    assert encode_args(["--a", "b c"]) == b"--a\0b c\0"


def test_unpassable_commands_and_env_are_tool_errors() -> None:
    with pytest.raises(ToolError, match="NUL"):
        check_command("echo \0")
    with pytest.raises(ToolError, match="longer"):
        check_command("#" * (MAX_COMMAND_BYTES + 1))
    check_command("#" * MAX_COMMAND_BYTES)
    with pytest.raises(ToolError, match="name"):
        check_env({"A-B": "x"})
    with pytest.raises(ToolError, match="NUL"):
        check_env({"A": "\0"})
