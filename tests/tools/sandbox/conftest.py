"""Fixtures for the sandbox tests.

The `sandbox`, `workspace` and `leftovers` fixtures are in tests/conftest.py.
"""

from __future__ import annotations

import pytest

SECRET_NAME = "HARNESS_TEST_SECRET"
SECRET_VALUE = "hunter2"


@pytest.fixture(autouse=True)
def secret_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A secret in the harness's environment that must never reach a sandbox."""
    monkeypatch.setenv(SECRET_NAME, SECRET_VALUE)
