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
from collections.abc import Callable

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


def _triage(request: ModelRequest) -> Message:
    return reply(None, call("transfer_to_recorded_billing", {"reason": "a charge"}, id="h1"))


def _billing(request: ModelRequest) -> Message:
    if not any(m.role == "tool" and m.name == "lookup" for m in request.messages):
        return reply(None, call("lookup", {"topic": "charges"}, id="b1"))
    return reply("the charge is refunded")


def _supervisor(request: ModelRequest) -> Message:
    results = [m.content or "" for m in request.messages if m.role == "tool"]
    if not results:
        calls = [call(RESEARCHER, {"task": f"topic {i}"}, id=f"r{i}") for i in range(2)]
        return reply(None, *calls)
    return reply(" | ".join(results))


def _researcher(request: ModelRequest) -> Message:
    task = next(m.content or "" for m in request.messages if m.role == "user")
    if not any(m.role == "tool" for m in request.messages):
        return reply(None, call("lookup", {"topic": task}, id="x1"))
    return reply(f"found {task}")


def _listener(request: ModelRequest) -> Message:
    heard = [m.content for m in request.messages if m.role == "tool"]
    if not heard:
        return reply(None, call("wait_for_message", {"timeout_s": 60}, id="w1"))
    return reply(f"heard: {heard[-1]}")


LOOKUPS = 12
"""How many lookups the long run makes, one per step (its history is renewed on the way)."""


def _long(request: ModelRequest) -> Message:
    done = sum(m.role == "tool" for m in request.messages)
    if done < LOOKUPS:
        return reply(f"lookup {done}", call("lookup", {"topic": f"part {done}"}, id=f"k{done}"))
    return reply(f"looked up {done} parts")


TRIAGE, BILLING, SUPERVISOR, RESEARCHER, LISTENER, LONG = (
    "recorded_triage",
    "recorded_billing",
    "recorded_supervisor",
    "recorded_researcher",
    "recorded_listener",
    "recorded_long",
)


def recorded_agents(gate: asyncio.Event | None = None) -> tuple[Agent, ...]:
    """Every agent of the recorded histories: `recorded_agent(gate)`, a triage agent that
    hands over to billing, a supervisor with two researcher children, a listener that
    waits for a message, and a long run of lookups."""

    def model(script: Callable[[ModelRequest], Message], name: str) -> FunctionModel:
        return FunctionModel(script, name=name, keep_requests=False)

    billing = Agent(
        name=BILLING, model=model(_billing, "billing-model"), tools=[lookup], description="Charges."
    )
    researcher = Agent(name=RESEARCHER, model=model(_researcher, "research-model"), tools=[lookup])
    return (
        recorded_agent(gate),
        Agent(name=TRIAGE, model=model(_triage, "triage-model"), handoffs=[billing]),
        billing,
        Agent(
            name=SUPERVISOR,
            model=model(_supervisor, "supervisor-model"),
            tools=[researcher.as_tool(description="Research one topic.")],
        ),
        researcher,
        Agent(name=LISTENER, model=model(_listener, "listener-model"), tools=["wait_for_message"]),
        Agent(name=LONG, model=model(_long, "long-model"), tools=[lookup]),
    )


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
