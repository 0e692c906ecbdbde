"""The agent of the recorded workflow histories (tests/fixtures/temporal/): the recorder and
the replay test build the same one.

Replay runs the workflow code again against what its activities returned: the model's
replies, the tools' results, and the tools' descriptions (side effects, approval policy)
come from the history, never from here. What the workflow builds from the agent as
defined now still counts (its strategy, limits and stop conditions, for instance): an
agent changed that way changes the commands of its runs in flight, as the workflow code
would.
"""

import asyncio

from harness import Agent, Message, ModelRequest, tool
from harness.gateway.scripted import FunctionModel, call, reply

NAME = "recorded"


@tool(side_effects="none")
def lookup(topic: str) -> str:
    """Look a topic up (no side effects)."""
    return f"notes on {topic}"


@tool(side_effects="mutating", approval="ask")
def publish(text: str) -> str:
    """Publish a text (needs approval; not safe to repeat)."""
    return f"published {len(text)} characters"


@tool(side_effects="idempotent")
async def wait_for(seconds: float) -> str:
    """Wait a number of seconds (a call that takes a while; safe to repeat)."""
    await asyncio.sleep(seconds)
    return "waited"


def _script(request: ModelRequest) -> Message:
    task = next(m.content or "" for m in request.messages if m.role == "user")
    done = [m.name for m in request.messages if m.role == "tool"]
    if task.startswith("wait"):  # the run of the cancel: one long call
        return reply(None, call("wait_for", {"seconds": 60}, id="w1"))
    if not done:
        return reply("first, the notes", call("lookup", {"topic": task}, id="l1"))
    if len(done) == 1:
        return reply(None, call("publish", {"text": f"about {task}"}, id="p1"))
    return reply(f"published about {task}")


def recorded_agent(gate: asyncio.Event | None = None) -> Agent:
    """The agent; with `gate`, each model turn first waits until the gate is set."""

    async def answer(request: ModelRequest) -> Message:
        if gate is not None:
            await gate.wait()
        return _script(request)

    return Agent(
        name=NAME,
        model=FunctionModel(answer, name="recorded-model", keep_requests=False),
        tools=[lookup, publish, wait_for],
        instructions="Look the topic up, then publish about it.",
    )
