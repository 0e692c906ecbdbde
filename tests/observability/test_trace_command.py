"""`harness trace RUN`: the waterfall of a stored run, drawn from the store by a real process
without a collector and without importing OpenTelemetry; `--json` for machines."""

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from harness import Agent, Harness, Message, ModelRequest, tool
from harness.observability import TraceContext
from harness.runtime import Settings
from harness.testing import FunctionModel, call, reply

from .conftest import scripted_run

TRACE = """
import atexit, sys
from harness.cli.app import main
def report():
    loaded = any(m.startswith("opentelemetry") for m in sys.modules)
    print("otel loaded:", loaded, file=sys.stderr)
atexit.register(report)
sys.argv = ["harness", "trace", *sys.argv[1:]]
main()
"""


def trace(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(HARNESS_HOME=str(home), NO_COLOR="1", COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-c", TRACE, *args], env=env, capture_output=True, text=True, timeout=60
    )


async def test_the_waterfall_of_a_stored_run(tmp_path: Path) -> None:
    result, _, _ = await scripted_run(tmp_path)
    done = trace(tmp_path, result.run_id)
    assert done.returncode == 0, done.stderr
    assert "otel loaded: False" in done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("trace ")
    rows = [line for line in lines[2:] if line.strip()]
    names = [row.strip(" ✗…").split("  ")[0] for row in rows]
    assert names[:3] == ["invoke_agent tracer", "step 1", "chat gpt-main"]
    # the two calls of step 1 run at once: siblings are drawn by when each really started,
    # which either may win by a few microseconds
    assert sorted(names[3:5]) == ["execute_tool boom", "execute_tool dump"]
    assert names[5:] == ["step 2", "compact_context trim", "chat gpt-main"]
    indents = [len(row) - len(row.lstrip(" ✗…")) for row in rows]
    assert indents[:3] == [2, 4, 6]  # the status mark's column, then two spaces a level
    by_name = dict(zip(names, rows, strict=True))
    assert "✗ execute_tool boom" in by_name["execute_tool boom"]
    assert "tool_error" in by_name["execute_tool boom"]
    first_chat, second_chat = rows[2], rows[7]
    assert "300 in / 20 out · model_retry ×1" in first_chat
    assert "40 in / 7 out · model_retry ×1 · model_fallback ×1" in second_chat
    assert "final_answer" in rows[0]
    assert "340 in / 27 out" in rows[0]
    assert "█" in rows[0]
    assert "tokens" in by_name["compact_context trim"]


async def test_trace_json_carries_the_ids_the_live_export_uses(tmp_path: Path) -> None:
    result, _, live = await scripted_run(tmp_path)
    done = trace(tmp_path, result.run_id, "--json")
    assert done.returncode == 0, done.stderr
    spans = json.loads(done.stdout)
    exported = {format(s.context.span_id, "016x"): s.name for s in live}
    assert {s["span_id"]: s["name"] for s in spans} == exported
    assert {s["trace_id"] for s in spans} == {format(live[0].context.trace_id, "032x")}
    run = spans[0]
    assert (run["name"], run["depth"], run["finished"]) == ("invoke_agent tracer", 0, True)
    boom = next(s for s in spans if s["name"] == "execute_tool boom")
    assert (boom["status"], boom["attributes"]["error.type"]) == ("error", "tool_error")


def test_an_unknown_run_is_a_clear_error(tmp_path: Path) -> None:
    done = trace(tmp_path, "run_nope")
    assert done.returncode != 0
    assert "no run run_nope" in done.stderr


@tool(side_effects="none")
async def hang() -> str:
    """Wait an hour."""
    await asyncio.sleep(3600)
    return "late"


async def test_a_run_still_going_shows_its_open_spans_as_unfinished(tmp_path: Path) -> None:
    def once(request: ModelRequest) -> Message:
        return reply(None, call("hang", {}, id="h1"))

    agent = Agent(name="slow", model=FunctionModel(once), tools=[hang])
    async with Harness(Settings(home=tmp_path)) as h:
        run_id = await h.submit(agent, "wait")
        async with asyncio.timeout(10):  # tool_started commits before the tool runs
            while not any(e.type == "tool_started" for e in await h.store.events(run_id)):
                await asyncio.sleep(0.02)
        stored = TraceContext.parse((await h.get(run_id)).trace_parent or "")
        done = await asyncio.to_thread(trace, tmp_path, run_id, "--json")
        await h.cancel(run_id)
    assert done.returncode == 0, done.stderr
    spans = json.loads(done.stdout)
    assert [(s["name"], s["finished"]) for s in spans] == [
        ("invoke_agent slow", False),
        ("step 1", False),
        ("chat function", True),
        ("execute_tool hang", False),
    ]
    assert spans[0]["span_id"] == stored.span_id
