"""harness, durable: every event and message of every run committed to SQLite (WAL).

An adapter for ../shared/bench/peers (copied next to its adapters by bench/durable.py).
"""

from __future__ import annotations

from pathlib import Path

from ._common import LATENCY, PROMPT, TOOL_ARGS_JSON, model_latency

NAME = "harness, durable (SQLite WAL, every event + message)"
DISTS: tuple[str, ...] = ("harness",)
FLOOR = "raw_durable"

_harness = None
_agent = None


async def setup(workdir: str) -> None:
    global _harness, _agent
    from harness import Agent, Harness, tool
    from harness.gateway.scripted import FunctionModel, call, reply
    from harness.runtime import Settings

    @tool(side_effects="none")
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def model(request):  # type: ignore[no-untyped-def]
        await model_latency()
        last = request.messages[-1]
        if last.role == "tool":
            return reply(last.content)
        return reply(None, call("add", TOOL_ARGS_JSON))

    _agent = Agent(name="bench", model=FunctionModel(model, keep_requests=False), tools=[add])
    _harness = Harness(Settings(home=Path(workdir)), max_concurrent=2000, adopt=False)
    await _harness.open()


async def teardown() -> None:
    await _harness.aclose()


async def run_once(latency_s: float) -> str:
    LATENCY.set(latency_s)
    result = await _harness.run(_agent, PROMPT)
    return result.output
