"""The static checks are part of the test suite, so that CI runs them on every change."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    found = BIN / name
    return str(found) if found.exists() else (shutil.which(name) or name)


def check(*args: str) -> None:
    result = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]


def test_layers_point_down() -> None:
    check(tool("lint-imports"))


def test_ruff() -> None:
    check(tool("ruff"), "check", "src", "tests", "bench")


def test_pyright_strict_on_src() -> None:
    check(tool("pyright"), "src")
