"""Per-run and per-step overhead of the agent loop itself, with an in-process model.

The loop reports to an in-memory sink (no store): this is what harness adds to every step
before persistence. bench/runtime.py measures the durable runtime.

The scenario of ../shared/bench/peers: one tool `add(a, b)`; the model asks for add(2, 3),
then answers with the tool's result. One run = 2 model calls + 1 tool call = 3 steps.
Next to harness it times a minimal hand-written loop over plain dicts (the floor).

    python bench/overhead.py [--runs 2000] [--concurrent 1000] [--latency 0.05] [--json FILE]

Prints a markdown table. Nothing here is a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

from harness import Message, ModelRequest, Toolset, tool
from harness.agent import AgentLoop, AgentSpec
from harness.gateway.scripted import FunctionModel, call, reply
from harness.runtime.bus import EventBus, RunRecorder
from harness.tools import MemoryAuditLog

ARGS = '{"a": 2, "b": 3}'
STEPS = 3


@tool(side_effects="none")
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _script(request: ModelRequest) -> Message:
    last = request.messages[-1]
    if last.role == "tool":
        return reply(last.content)
    return reply(None, call("add", ARGS))


async def _raw_run(latency: float) -> str:
    messages: list[dict[str, object]] = [{"role": "user", "content": "What is 2 + 3?"}]
    while True:
        if latency:
            await asyncio.sleep(latency)
        last = messages[-1]
        if last["role"] == "tool":
            return str(last["content"])
        tool_call = {"id": "c", "name": "add", "arguments": ARGS}
        answer = {"role": "assistant", "tool_calls": [tool_call]}
        messages.append(answer)
        result = await add.function(**json.loads(ARGS))
        messages.append({"role": "tool", "tool_call_id": "c", "content": str(result)})


def _harness_runner(latency: float) -> Callable[[], Awaitable[str | None]]:
    model = FunctionModel(_script, latency_s=latency)
    spec = AgentSpec(name="bench", model=model, tools=[add])
    toolset = Toolset([add])
    bus = EventBus()

    async def run() -> str | None:
        # The test model keeps every request, and a request's observer holds its whole run:
        # kept, they would grow the heap run after run and bill the collector to the loop.
        model.requests.clear()
        loop = AgentLoop(
            spec, model=model, toolset=toolset, sink=RunRecorder("run", bus), audit=MemoryAuditLog()
        )
        messages = [Message.system(spec.instructions), Message.user("What is 2 + 3?")]
        return (await loop.run("run", messages)).output

    return run


async def _sequential(run: Callable[[], Awaitable[str | None]], n: int) -> float:
    for _ in range(50):
        assert await run() == "5"
    start = time.perf_counter()
    for _ in range(n):
        await run()
    return (time.perf_counter() - start) / n * 1e6


async def _concurrent(run: Callable[[], Awaitable[str | None]], n: int) -> float:
    start = time.perf_counter()
    answers = await asyncio.gather(*(run() for _ in range(n)))
    assert all(a == "5" for a in answers)
    return (time.perf_counter() - start) * 1e3


def _import_ms() -> float:
    code = "import time; t = time.perf_counter(); import harness; print(time.perf_counter() - t)"
    times = [float(subprocess.check_output([sys.executable, "-c", code])) for _ in range(5)]
    return statistics.median(times) * 1e3


async def _main(args: argparse.Namespace) -> dict[str, float]:
    raw_seq = await _sequential(lambda: _raw_run(0), args.runs)
    seq = await _sequential(_harness_runner(0), args.runs)
    raw_conc = await _concurrent(lambda: _raw_run(args.latency), args.concurrent)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    conc = await _concurrent(_harness_runner(args.latency), args.concurrent)
    rss_growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    floor = 2 * args.latency * 1e3
    print(
        f"| variant | seq µs/run | µs/step | {args.concurrent} concurrent, "
        f"{args.latency * 1e3:.0f} ms model latency: wall ms (floor {floor:.0f}) |"
    )
    print("|---|---:|---:|---:|")
    print(f"| raw loop (plain dicts) | {raw_seq:.1f} | {raw_seq / STEPS:.1f} | {raw_conc:.0f} |")
    print(
        f"| harness agent loop: validation, approval policy, audit, events | {seq:.1f} | "
        f"{seq / STEPS:.1f} | {conc:.0f} |"
    )
    print(
        f"\nharness peak RSS growth during the concurrent burst: {rss_growth:.1f} MiB; "
        f"`import harness`: {_import_ms():.0f} ms (median of 5)"
    )
    return {"raw_loop_us": raw_seq, "loop_us": seq, "loop_concurrent_ms": conc}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--concurrent", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--json", default="", help="also write the numbers to this file")
    arguments = parser.parse_args()
    measured = asyncio.run(_main(arguments))
    if arguments.json:
        with open(arguments.json, "w") as out:
            json.dump(measured, out)
