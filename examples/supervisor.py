"""A supervisor that researches several topics at once with researcher agents.

Each call of the `researcher` tool runs the researcher agent as a child run of the
supervisor, in the same store: the calls of one reply run together (fan-out), and the
supervisor answers from all their results (gather). Afterwards the tree of runs is printed,
as `harness runs tree RUN` shows it.

    python examples/supervisor.py "How do tides work?"                  # scripted models
    python examples/supervisor.py --model local "How do tides work?"    # a real model profile
    python examples/supervisor.py --model openai:qwen3-8b --base-url http://127.0.0.1:8080/v1 "…"

Runs are kept under HARNESS_HOME (./.harness by default): `harness runs tree RUN` and
`harness runs events RUN --tree` show them afterwards.
"""

from __future__ import annotations

import argparse
import asyncio

from harness import Agent, Harness, Message, ModelRequest
from harness.gateway.model import Model
from harness.runtime.children import TreeNode, run_tree
from harness.testing import FunctionModel, call, reply

TOPICS = ("the moon's pull", "the sun's pull", "the shape of coasts")


def _scripted_supervisor(request: ModelRequest) -> Message:
    results = [m.content or "" for m in request.messages if m.role == "tool"]
    if not results:
        return reply(
            "I will research three topics at once.",
            *(call("researcher", {"task": f"Explain {t} in one sentence."}) for t in TOPICS),
        )
    return reply("Tides, in short:\n" + "\n".join(f"- {r}" for r in results))


def _scripted_researcher(request: ModelRequest) -> Message:
    task = next(m.content or "" for m in request.messages if m.role == "user")
    return reply(f"Notes on '{task.removeprefix('Explain ').rstrip('.')}'.")


def agents(model: str | None) -> tuple[Agent, Agent]:
    """The supervisor and its researcher, on `model` (a profile name) or scripted."""
    sup_model: str | Model = model or FunctionModel(_scripted_supervisor, latency_s=0.05)
    res_model: str | Model = model or FunctionModel(_scripted_researcher, latency_s=0.2)
    researcher = Agent(
        name="researcher",
        model=res_model,
        instructions="You research one topic and answer in two sentences at most.",
    )
    supervisor = Agent(
        name="supervisor",
        model=sup_model,
        instructions=(
            "Split the question into two to four topics and call the researcher once per "
            "topic, all in one reply. Then answer from what they found."
        ),
        tools=[researcher.as_tool(description="Research one topic; give it a complete task.")],
    )
    return supervisor, researcher


def show(node: TreeNode, indent: str = "") -> None:
    """Print a tree of runs: state, agent, steps and cost of each."""
    r = node.record
    print(f"{indent}{r.run_id}  {r.state}  {r.agent}  {node.steps} steps  ${r.usage.cost_usd:g}")
    for child in node.children:
        show(child, indent + "  ")


async def main(question: str, model: str | None, base_url: str | None = None) -> None:
    """Run the supervisor on `question`, then print its answer and its tree of runs."""
    supervisor, researcher = agents(model)
    async with Harness(agents=(researcher,), base_url=base_url) as harness:
        result = await harness.run(supervisor, question)
        print(result.output)
        print()
        show(await run_tree(harness, result.run_id))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--model", help="a model profile for both agents (default: scripted)")
    parser.add_argument("--base-url", help="the OpenAI-compatible server of --model")
    args = parser.parse_args()
    asyncio.run(main(args.question, args.model, args.base_url))
