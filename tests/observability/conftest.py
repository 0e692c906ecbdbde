"""Shared pieces of the trace tests: a scripted run with a retry, a fallback, a failing tool
and a compaction, run by a real Harness on SQLite, its spans caught by the SDK's in-memory
exporter."""

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness import Agent, Harness, tool
from harness.core import RunEvent, RunResult
from harness.errors import ToolError
from harness.gateway import ModelProfile
from harness.memory import ContextPolicy
from harness.observability.otel import OtelExport
from harness.runtime import Settings
from harness.testing import FakeOpenAIServer, FakeReply, faults

TASK = "Summarise the secret plan"


@tool(side_effects="none")
def boom() -> str:
    """Always fails."""
    raise ToolError("the vault is locked", hint="try dump")


@tool(side_effects="none")
def dump(size: int) -> str:
    """Return `size` characters of text."""
    return ("lorem ipsum dolor " * 1000)[:size]


def scripts() -> tuple[list[FakeReply], list[FakeReply]]:
    """Main: a 500 then two tool calls (retried once); then 500s, so the spare answers."""
    calls = FakeReply.tool_calls([("boom", {}), ("dump", {"size": 3000})])
    main = [
        faults.status(500, retry_after_ms=1),
        dataclasses.replace(calls, input_tokens=300, output_tokens=20),
        faults.status(500, retry_after_ms=1),
        faults.status(500, retry_after_ms=1),
    ]
    return main, [FakeReply.text("the plan is safe", input_tokens=40, output_tokens=7)]


def profiles(main: FakeOpenAIServer, spare: FakeOpenAIServer) -> dict[str, ModelProfile]:
    return {
        "main": ModelProfile(
            name="main",
            model="gpt-main",
            base_url=main.base_url,
            max_retries=1,
            fallbacks=("spare",),
        ),
        "spare": ModelProfile(
            name="spare", model="gpt-spare", base_url=spare.base_url, max_retries=0
        ),
    }


AGENT = Agent(
    name="tracer", model="main", tools=[boom, dump], context=ContextPolicy(context_window=1000)
)


async def scripted_run(
    home: Path, *, capture: bool | None = None
) -> tuple[RunResult, list[RunEvent], Sequence[ReadableSpan]]:
    exporter = InMemorySpanExporter()
    main_script, spare_script = scripts()
    with FakeOpenAIServer(main_script) as main, FakeOpenAIServer(spare_script) as spare:
        settings = Settings(home=home, profiles=profiles(main, spare))
        if capture is not None:
            from harness.observability import TraceSettings

            settings = dataclasses.replace(
                settings, observability=TraceSettings(capture_content=capture)
            )
        export = OtelExport(processor=SimpleSpanProcessor(exporter))
        async with Harness(settings, traces=export) as h:
            result = await h.run(AGENT, TASK, timeout=30)
            events = await h.store.events(result.run_id)
    return result, events, exporter.get_finished_spans()


def tree(spans: Sequence[ReadableSpan]) -> list[tuple[str, str | None]]:
    """Each span's name and its parent's name, in the order they were exported."""
    names = {s.context.span_id: s.name for s in spans}
    return [(s.name, names.get(s.parent.span_id) if s.parent else None) for s in spans]
