"""`max_concurrent` on a tool: `CallSlots`, and a `Toolset` that takes a slot per call."""

from __future__ import annotations

import asyncio

import pytest

from harness.core import Limits, ToolCall
from harness.errors import ToolDefinitionError
from harness.tools import CallSlots, Toolset, ToolSpec, tool


class Gauge:
    def __init__(self) -> None:
        self.now = 0
        self.most = 0

    async def __call__(self) -> str:
        self.now += 1
        self.most = max(self.most, self.now)
        await asyncio.sleep(0.01)
        self.now -= 1
        return "ok"


def spec(gauge: Gauge, **options: object) -> ToolSpec:
    return ToolSpec.from_schema(
        name="query",
        description="Query.",
        parameters={"type": "object"},
        function=gauge,
        side_effects="none",
        **options,  # type: ignore[arg-type]
    )


def calls(n: int) -> list[ToolCall]:
    return [ToolCall(id=f"c{i}", name="query", arguments="{}") for i in range(n)]


async def test_a_toolset_runs_at_most_max_concurrent_calls_of_a_tool() -> None:
    gauge = Gauge()
    toolset = Toolset([spec(gauge, max_concurrent=2)])
    outcomes = await asyncio.gather(*(toolset.execute(c, limits=Limits()) for c in calls(7)))
    assert [o.status for o in outcomes] == ["ok"] * 7
    assert gauge.most == 2
    slots = toolset.slots("query")
    assert slots is not None
    assert (slots.limit, slots.peak, slots.running, slots.waiting) == (2, 2, 0, 0)


async def test_toolsets_given_the_same_slots_share_the_limit() -> None:
    gauge = Gauge()
    shared = CallSlots("query", 1)
    first = Toolset([spec(gauge)], slots={"query": shared})
    second = Toolset([spec(gauge)], slots={"query": shared})
    work = [t.execute(c, limits=Limits()) for t in (first, second) for c in calls(3)]
    await asyncio.gather(*work)
    assert gauge.most == 1
    assert first.slots("query") is second.slots("query") is shared


async def test_without_a_limit_calls_overlap() -> None:
    gauge = Gauge()
    toolset = Toolset([spec(gauge)])
    await asyncio.gather(*(toolset.execute(c, limits=Limits()) for c in calls(4)))
    assert gauge.most == 4
    assert toolset.slots("query") is None


def test_tags_and_limits_are_checked_where_the_tool_is_declared() -> None:
    with pytest.raises(ToolDefinitionError, match="max_concurrent must be >= 1"):
        spec(Gauge(), max_concurrent=0)
    with pytest.raises(ToolDefinitionError, match="tag 'two words' is invalid"):
        spec(Gauge(), tags=("two words",))
    with pytest.raises(ToolDefinitionError, match="max_concurrent must be >= 1, not 0"):
        CallSlots("query", 0)

    @tool(side_effects="none", tags=("db",), max_concurrent=3)
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    assert (lookup.tags, lookup.max_concurrent) == (("db",), 3)
