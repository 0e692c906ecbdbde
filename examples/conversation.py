"""Two agents talk by messages: a planner asks a reviewer for a review, the reviewer answers.

Each agent is a run of its own. The reviewer waits in `wait_for_message` (its run holds no
worker meanwhile); the planner sends its plan with `send_message`, then waits for the
answer. Every message is durable and read once; `harness runs events RUN` shows
`message_sent`, `run_waiting` and `message_received`.

    python examples/conversation.py                              # scripted models, no server
    python examples/conversation.py --model openai:gpt-4.1-mini  # a real model for both
    python examples/conversation.py --model openai:qwen3-8b --base-url http://127.0.0.1:8080/v1
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
from pathlib import Path

from harness import Agent, Harness, Message, ModelRequest
from harness.core.events import MessageReceived, MessageSent, payloads
from harness.runtime import Settings
from harness.testing import FunctionModel, call, reply

TOOLS = ["send_message", "wait_for_message"]
SENDER = re.compile(r"\[message from (run_\w+) \(agent \w+\)\]: (.*)", re.DOTALL)


def _tool_results(request: ModelRequest) -> list[str]:
    return [m.content or "" for m in request.messages if m.role == "tool"]


def _task(request: ModelRequest) -> str:
    return next(m.content or "" for m in request.messages if m.role == "user")


def _heard(request: ModelRequest) -> re.Match[str] | None:
    """The first message from another run: a tool's result, or delivered at a step's start.

    A message that arrives before its reader asks for one joins the conversation when the
    reader's next step starts, so a model must look for it there too.
    """
    texts = (m.content or "" for m in request.messages if m.role in ("user", "tool"))
    return next((found for text in texts if (found := SENDER.search(text))), None)


def _called(request: ModelRequest, tool: str) -> bool:
    return any(c.name == tool for m in request.messages for c in m.tool_calls or ())


def _reviews(request: ModelRequest) -> Message:
    """The scripted reviewer: wait for a plan, answer its sender, report."""
    heard = _heard(request)
    if heard is None:
        if not _tool_results(request):
            return reply(None, call("wait_for_message", {"timeout_s": 60}))
        return reply("No plan came.")
    if not _called(request, "send_message"):
        review = "Good plan; write the tests before the migration."
        return reply(None, call("send_message", {"to": heard[1], "content": review}))
    return reply(f"Reviewed the plan of {heard[1]}.")


def _plans(request: ModelRequest) -> Message:
    """The scripted planner: send the plan to the reviewer named in the task, wait, revise."""
    if not _called(request, "send_message"):
        reviewer = _task(request).split()[-1]
        plan = "1. add the column 2. migrate 3. deploy"
        return reply(None, call("send_message", {"to": reviewer, "content": plan}))
    heard = _heard(request)
    if heard is None and not _called(request, "wait_for_message"):
        return reply(None, call("wait_for_message", {"timeout_s": 60}))
    review = heard[2] if heard else "no review"
    return reply(f"Plan revised after the review ({review!r}): 1. tests 2. column 3. migrate.")


def agents(model: str | None) -> tuple[Agent, Agent]:
    """The reviewer and the planner: scripted, or both on `model`."""
    reviewer = Agent(
        name="reviewer",
        model=model or FunctionModel(_reviews),
        instructions="Wait for a plan with wait_for_message, send your review to the run "
        "that sent it with send_message, then say what you did.",
        tools=TOOLS,
    )
    planner = Agent(
        name="planner",
        model=model or FunctionModel(_plans),
        instructions="Write a short plan, send it to the reviewer run named in the task with "
        "send_message, wait for the review with wait_for_message, then give the revised plan.",
        tools=TOOLS,
    )
    return reviewer, planner


async def main(model: str | None, home: Path, base_url: str | None = None) -> None:
    """Start the reviewer, then the planner that writes to it; print what each said and sent."""
    reviewer, planner = agents(model)
    async with Harness(Settings(home=home), agents=(reviewer, planner), base_url=base_url) as h:
        reviewer_id = await h.submit(reviewer, "Review the plans other agents send you.")
        planner_id = await h.submit(planner, f"Plan a database change; ask {reviewer_id}")
        for run_id in (planner_id, reviewer_id):
            result = await h.wait(run_id, timeout=300)
            print(f"{run_id}: {result.output}")
            for event in await h.store.events(run_id):
                for sent in payloads([event], MessageSent):
                    print(f"  sent to {sent.to_run}: {sent.content}")
                for got in payloads([event], MessageReceived):
                    print(f"  received from {got.sender_run or got.sender}: {got.content}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model for both agents (default: scripted models)")
    parser.add_argument("--base-url", help="the OpenAI-compatible server of --model")
    parser.add_argument("--home", type=Path, help="HARNESS_HOME (default: a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        asyncio.run(main(args.model, args.home or Path(scratch), args.base_url))
