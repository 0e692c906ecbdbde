"""Fixtures for the tool protocol tests."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

import pytest

from harness.core import Limits, ToolCall

_ids = itertools.count(1)


def make_call(name: str, arguments: str | dict[str, object] = "{}") -> ToolCall:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(id=f"call_{next(_ids)}", name=name, arguments=text)


@pytest.fixture
def call() -> Callable[..., ToolCall]:
    return make_call


@pytest.fixture
def limits() -> Limits:
    return Limits(tool_timeout=5.0, max_result_chars=4000)
