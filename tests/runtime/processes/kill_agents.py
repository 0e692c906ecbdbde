"""Agents that run in a child process which the tests SIGKILL, and again in the test itself.

Every model here decides from the conversation alone, so that the process that takes a
run over answers exactly as the one that died would have.
"""

import asyncio
import json
import os
from pathlib import Path

from harness import Agent, Limits, Message, ModelRequest, tool
from harness.gateway.scripted import FunctionModel, call, reply
from harness.memory import ContextPolicy


def _log(line: str) -> None:
    """Append `line` to the file AGENTS_LOG names (read at each call), if it names one."""
    if not os.environ.get("AGENTS_LOG"):
        return
    with Path(os.environ["AGENTS_LOG"]).open("a", encoding="utf-8") as log:
        log.write(line + "\n")
        log.flush()
        os.fsync(log.fileno())


@tool(side_effects="mutating", approval="ask")
def deploy(n: int) -> str:
    """Deploy build n (needs approval; not safe to repeat)."""
    _log(f"deployed {n}")
    return f"deployed {n}"


@tool(side_effects="none")
def long_log() -> str:
    """Print a long log."""
    return "".join(f"line {n:05d}\n" for n in range(2000))


def _tool_results(request: ModelRequest) -> list[Message]:
    return [m for m in request.messages if m.role == "tool"]


def _deploys(request: ModelRequest) -> Message:
    """`deploy N` asks to deploy builds 0 .. N-1, one approval each, then answers."""
    task = next(m.content or "" for m in request.messages if m.role == "user")
    done = len(_tool_results(request))
    if done < int(task.split()[-1]):
        return reply(None, call("deploy", {"n": done}, id=f"d{done}"))
    return reply(f"shipped {done}")


DENIALS_ALLOWED = 100
"""Denials in a row that the deployer's run takes without a repeated-failure stop.

A denied call is a failed call: by default 3 in a row inject a hint and 6 stop the run
(`repeated_failure`). The deployer's model ignores hints, and the tests deny as many of
its calls as a race makes them (up to every one): each denied call must still be followed
by the next request, so the stop is out of reach here."""


def deployer() -> Agent:
    """Asks for approval of one deploy after another, however many are denied."""
    return Agent(
        name="deployer",
        model=FunctionModel(_deploys),
        tools=[deploy],
        limits=Limits(max_identical_failures=DENIALS_ALLOWED),
    )


async def _stuck_after_the_log(request: ModelRequest) -> Message:
    if not _tool_results(request):
        return reply(None, call("long_log", {}, id="log1"))
    print("stuck", flush=True)
    await asyncio.Event().wait()  # until the process is killed
    raise AssertionError("unreachable")


def reader() -> Agent:
    """Reads a long log, then hangs in its next model call (in the process to kill)."""
    return Agent(name="reader", model=FunctionModel(_stuck_after_the_log), tools=[long_log])


def _pages_the_log(request: ModelRequest) -> Message:
    last = request.messages[-1]
    if last.tool_call_id == "log1":
        return reply(None, call("read_result", {"call_id": "log1", "offset": 11_000}))
    if last.role == "tool":
        return reply(last.content or "")
    return reply(None, call("long_log", {}, id="log1"))


def page_reader() -> Agent:
    """The `reader` of the process that takes over: pages the cut result, answers with it."""
    return Agent(name="reader", model=FunctionModel(_pages_the_log), tools=[long_log])


def _slow_answer(request: ModelRequest) -> Message:
    return reply("answered")


def sleeper(latency_s: float = 3600.0) -> Agent:
    """Takes `latency_s` to answer its one model call."""
    return Agent(name="sleeper", model=FunctionModel(_slow_answer, latency_s=latency_s))


@tool(side_effects="none")
def lookup(city: str) -> str:
    """Look up the weather of a city."""
    return f"{city}: 21 degrees " + "and more details " * 60


SUMMARY_PROMPTS = ("You compress the history", "An AI agent's context window")
CONTEXT = ContextPolicy(context_window=2000, trim_at=0.5, summarize_at=0.5, keep_last_turns=1)


async def _lookups_until_summarized(request: ModelRequest) -> Message | str:
    if (request.messages[0].content or "").startswith(SUMMARY_PROMPTS):
        return "FIRST SUMMARY"
    if any("FIRST SUMMARY" in (m.content or "") for m in request.messages):
        print("summarized", flush=True)
        await asyncio.Event().wait()  # until the process is killed
    city = f"City {len(_tool_results(request)) + 1}"
    return reply(None, call("lookup", {"city": city}))


def compactor() -> Agent:
    """Looks cities up until its context is summarized, then hangs (in the process to kill)."""
    model = FunctionModel(_lookups_until_summarized)
    return Agent(name="ctx", model=model, tools=[lookup], context=CONTEXT)


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def _plans_until_step_2(request: ModelRequest) -> Message | str:
    text = request.messages[-1].content or ""
    if text.startswith("Make a plan"):
        steps = ["add 2 and 3", "double the sum"]
        return json.dumps({"steps": [{"description": s} for s in steps]})
    if text.startswith("Plan step 1"):
        return reply(None, call("add", {"a": 2, "b": 3}))
    if text.startswith("Plan step 2"):
        print("at step 2", flush=True)
        await asyncio.Event().wait()  # until the process is killed
    return f"got {text}"


def planner() -> Agent:
    """Plans two steps, does the first, hangs in the second (in the process to kill)."""
    return Agent(
        name="planner",
        model=FunctionModel(_plans_until_step_2),
        tools=[add],
        strategy="plan_execute",
        limits=Limits(max_steps=20),
    )


TRIAGE_PROMPT = "You are triage: hand billing questions to billing."
BILLING_PROMPT = "You are billing: resolve charges and refunds."


def _triages(request: ModelRequest) -> Message:
    return reply(None, call("transfer_to_billing", {"reason": "a charge"}, id="h1"))


async def _stuck_in_billing(request: ModelRequest) -> Message:
    print("in billing", flush=True)
    await asyncio.Event().wait()  # until the process is killed
    raise AssertionError("unreachable")


def triage(billing: Agent | None = None, model: FunctionModel | None = None) -> Agent:
    """Hands every task to `billing`; by default one whose model hangs (the process to kill)."""
    billing = billing or Agent(
        name="billing",
        instructions=BILLING_PROMPT,
        description="Charges and refunds.",
        model=FunctionModel(_stuck_in_billing),
    )
    return Agent(
        name="triage",
        instructions=TRIAGE_PROMPT,
        model=model or FunctionModel(_triages),
        handoffs=[billing],
    )


def _listens(request: ModelRequest) -> Message:
    """`listen N`: wait for a message for up to N s (one call), then answer with its result."""
    results = _tool_results(request)
    if not results:
        task = next(m.content or "" for m in request.messages if m.role == "user")
        wait = {"timeout_s": float(task.split()[-1])}
        return reply(None, call("wait_for_message", wait, id="w1"))
    return reply(f"heard: {results[-1].content}")


def listener() -> Agent:
    """Waits for a message with `wait_for_message`, then answers with what it got."""
    return Agent(
        name="listener",
        model=FunctionModel(_listens),
        tools=["wait_for_message"],
        limits=Limits(tool_timeout=3600),
    )


AGENTS = {
    "triage": triage,
    "compactor": compactor,
    "listener": listener,
    "planner": planner,
    "deployer": deployer,
    "reader": reader,
    "sleeper": sleeper,
}
