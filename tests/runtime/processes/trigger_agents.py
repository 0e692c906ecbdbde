"""A coder and a reviewer for the trigger tests, in the test process and in child processes.

Both answer from the conversation alone, so a run taken over by another process answers
as it would have in the one that died.
"""

from harness import Agent, ModelRequest
from harness.gateway.scripted import FunctionModel

REVIEW = "Review the work of run {run_id} ({agent}, {termination}): {result}"
"""The reviewer trigger's task template."""


def _task(request: ModelRequest) -> str:
    return next(m.content or "" for m in request.messages if m.role == "user")


def _patch(request: ModelRequest) -> str:
    return f"patched: {_task(request)}"


def _review(request: ModelRequest) -> str:
    return f"approved after reading: {_task(request)}"


def coder(latency_s: float = 0.0) -> Agent:
    """Answers `patched: TASK` after `latency_s`."""
    return Agent(name="coder", model=FunctionModel(_patch, latency_s=latency_s))


def reviewer(latency_s: float = 0.0) -> Agent:
    """Answers that it approves what its task shows."""
    return Agent(name="reviewer", model=FunctionModel(_review, latency_s=latency_s))
