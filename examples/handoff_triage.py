"""Triage hands a customer over to a specialist: a handoff, durable like any run.

The triage agent may hand the conversation over to `billing` or `shipping` (each a
`transfer_to_NAME` tool). The run goes on under the agent it was handed to, with the whole
conversation, in the same run: one row, one event log, one usage.

    python examples/handoff_triage.py                       # scripted models, no server
    python examples/handoff_triage.py --model openai:gpt-4.1-mini "I was charged twice"
    python examples/handoff_triage.py --model local --base-url http://127.0.0.1:8080/v1

Without `--model` every agent answers from a script that decides from the conversation
alone, so the example runs anywhere (and `tests/examples/test_handoff_triage.py` runs it).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
from pathlib import Path

from harness import Agent, Harness, Message, ModelRequest, RunEvent, RunResult, tool
from harness.core.events import Handoff, RunStarted, ToolCompleted
from harness.gateway.scripted import FunctionModel, call, reply
from harness.runtime import Settings

TASK = "Hello, I was charged twice for order 42. Can I get my money back?"


@tool(side_effects="none")
def refund_status(order: int) -> str:
    """The refund status of an order."""
    return f"order {order}: charged twice on 2026-11-30; one refund of 19.90 EUR is pending"


@tool(side_effects="none")
def track_parcel(order: int) -> str:
    """Where an order's parcel is."""
    return f"order {order}: in transit, expected tomorrow"


def _task(request: ModelRequest) -> str:
    return next(m.content or "" for m in request.messages if m.role == "user")


def _order(text: str) -> int:
    found = re.search(r"order (\d+)", text)
    return int(found.group(1)) if found else 0


def _triage_script(request: ModelRequest) -> Message:
    """Routes by keywords: money to billing, parcels to shipping, the rest it answers."""
    task = _task(request).lower()
    if any(word in task for word in ("charge", "refund", "invoice", "money")):
        return reply(None, call("transfer_to_billing", {"reason": "a question about a charge"}))
    if any(word in task for word in ("parcel", "deliver", "where is")):
        return reply(None, call("transfer_to_shipping", {"reason": "a delivery question"}))
    return reply("I can help with billing and shipping questions. What do you need?")


def _specialist_script(tool_name: str) -> FunctionModel:
    """Looks the order up with `tool_name`, then answers with what it found."""

    def script(request: ModelRequest) -> Message:
        last = request.messages[-1]
        if last.role == "tool" and last.name == tool_name:
            return reply(f"Here is what I found: {last.content}.")
        return reply(None, call(tool_name, {"order": _order(_task(request))}))

    return FunctionModel(script, name=f"scripted-{tool_name}")


def agents(model: str | None = None, base_url: str | None = None) -> Agent:
    """The triage agent, with the specialists it hands over to (scripted without `model`)."""
    billing = Agent(
        name="billing",
        description="Charges, refunds and invoices of an order.",
        instructions="You are billing support. Look the order up, then answer the customer.",
        model=model or _specialist_script("refund_status"),
        base_url=base_url,
        tools=[refund_status],
    )
    shipping = Agent(
        name="shipping",
        description="Where a parcel is and when it arrives.",
        instructions="You are shipping support. Track the parcel, then answer the customer.",
        model=model or _specialist_script("track_parcel"),
        base_url=base_url,
        tools=[track_parcel],
    )
    return Agent(
        name="triage",
        description="First contact: routes each customer to the right team.",
        instructions=(
            "You are the first contact of customer support. Hand money questions over to "
            "billing and delivery questions to shipping; answer anything else yourself."
        ),
        model=model or FunctionModel(_triage_script, name="scripted-triage"),
        base_url=base_url,
        handoffs=[billing, shipping],
    )


def show(event: RunEvent) -> None:
    """Print the events that tell the story of the run."""
    match event.payload:
        case RunStarted(agent=agent, model=model):
            print(f"▶ {agent} ({model})")
        case Handoff(from_agent=source, to_agent=target, reason=reason):
            print(f"  ⇢ {source} hands over to {target}" + (f": {reason}" if reason else ""))
        case ToolCompleted(tool=name, result=result) if not name.startswith("transfer_to_"):
            print(f"  ⚙ {name}: {result}")
        case _:
            pass


async def main(
    task: str, *, home: Path, model: str | None = None, base_url: str | None = None
) -> RunResult:
    """Run the triage agent on `task` in a store under `home`; return the result."""
    async with Harness(Settings(home=home)) as harness:
        result = await harness.run(agents(model, base_url), task, on_event=show)
        record = await harness.get(result.run_id)
    print(f"\n{record.agent} answered: {result.output}")
    print(f"run {result.run_id}: {result.usage.requests} model requests in one run")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", nargs="?", default=TASK)
    parser.add_argument("--model", help="a model for every agent (default: scripted)")
    parser.add_argument("--base-url", help="the model server's address")
    parser.add_argument("--home", type=Path, help="HARNESS_HOME (default: a temporary one)")
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="harness-handoff-"))
    asyncio.run(main(args.task, home=home, model=args.model, base_url=args.base_url))
