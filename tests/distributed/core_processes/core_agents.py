"""Agents of the Temporal backend's tests, the same in the test and in its child processes.

Their models decide from the conversation alone, so a worker that takes a run over answers
exactly as the one that died would have.
"""

import asyncio
import os
from pathlib import Path

from harness import Agent, Limits, Message, ModelRequest, tool
from harness.gateway.scripted import FunctionModel, call, reply


def _ledger(line: str) -> None:
    """Append `line` to the file LEDGER names (read at each call), fsync'ed."""
    with Path(os.environ["LEDGER"]).open("a", encoding="utf-8") as ledger:
        ledger.write(line + "\n")
        ledger.flush()
        os.fsync(ledger.fileno())


@tool(side_effects="mutating")
async def deploy(n: int) -> str:
    """Deploy build n (not safe to repeat); takes a while."""
    _ledger(f"deploy {n} started")
    await asyncio.sleep(float(os.environ.get("DEPLOY_S", "0")))
    _ledger(f"deploy {n} done")
    return f"deployed {n}"


@tool(side_effects="mutating", approval="ask")
def publish(text: str) -> str:
    """Publish text (needs approval)."""
    _ledger(f"published {text}")
    return "published"


@tool(side_effects="none")
async def wait_a_bit(seconds: float) -> str:
    """Wait `seconds`."""
    await asyncio.sleep(seconds)
    return "waited"


def _results(request: ModelRequest) -> list[Message]:
    return [m for m in request.messages if m.role == "tool"]


def _deployer(request: ModelRequest) -> Message:
    results = _results(request)
    if not results:
        return reply(None, call("deploy", {"n": 1}, id="d1"))
    return reply(f"after deploy: {results[-1].content}")


def _steps(request: ModelRequest) -> Message:
    """`publish`, then waits of 0.3 s until 200 results (a minute: its tests cancel it
    first, however slowly their other processes start), then answers."""
    results = _results(request)
    if not results:
        return reply(None, call("publish", {"text": "news"}, id="p1"))
    if len(results) < 200:
        n = len(results)
        return reply(None, call("wait_a_bit", {"seconds": 0.3}, id=f"w{n}"))
    return reply(f"done after {len(results)} calls")


def deployer() -> Agent:
    """One mutating call, then an answer that quotes its result."""
    return Agent(name="deployer", model=FunctionModel(_deployer), tools=[deploy])


def stepper() -> Agent:
    """A call that needs approval, then many short steps (to pause and cancel)."""
    return Agent(
        name="stepper",
        model=FunctionModel(_steps),
        tools=[publish, wait_a_bit],
        limits=Limits(max_steps=500),  # no step limit ends it before its tests do
    )


AGENTS = {"deployer": deployer, "stepper": stepper}
