"""The static checks are part of the test suite, so that CI runs them on every change.

Each check is a program that runs on its own for up to a minute (pyright). They start in
the background as soon as collection has chosen their tests (`start_in_background`, called
by tests/conftest.py), once for the session however many processes run it, so that they
run beside the rest of the suite; each test waits for its program and fails with its
output. A test collected alone starts its program itself.
"""

import shutil
import sys
from pathlib import Path

from background_process import Background

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

CHECKS: dict[str, tuple[str, ...]] = {
    "test_layers_point_down": ("lint-imports",),
    "test_ruff": ("ruff", "check", "src", "tests", "bench"),
    "test_pyright_strict_on_src": ("pyright", "src"),
}
"""The command line of each test's check."""

_running: dict[str, Background] = {}


def tool(name: str) -> str:
    found = BIN / name
    return str(found) if found.exists() else (shutil.which(name) or name)


def start_in_background(test: str) -> None:
    """Start the check of `test`, when it has one and it is not running yet."""
    if test not in CHECKS or test in _running:
        return
    program, *args = CHECKS[test]
    _running[test] = Background.start(test, [tool(program), *args], ROOT)


def check(test: str) -> None:
    """Wait for the check of `test` (starting it if it is not running) and pass or fail."""
    start_in_background(test)
    returncode, text = _running.pop(test).wait()
    assert returncode == 0, text[-8000:]


def test_layers_point_down() -> None:
    check("test_layers_point_down")


def test_ruff() -> None:
    check("test_ruff")


def test_pyright_strict_on_src() -> None:
    check("test_pyright_strict_on_src")
