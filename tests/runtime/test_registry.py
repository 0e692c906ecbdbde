"""The tool registry of a `Harness`: tools registered once, picked by name, tag or glob, and
per-tool concurrency limits that hold across every agent and run of the process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness import Agent, Harness, tool
from harness.core import Message
from harness.errors import ConfigError, ToolDefinitionError
from harness.gateway import ModelRequest
from harness.runtime import Settings, ToolRegistry
from harness.runtime.registry import ToolConfig, glob_match, is_selector
from harness.testing import FunctionModel, call, reply
from harness.tools import CallSlots, ToolSpec


@tool(side_effects="none", tags=("db",))
def find_order(order_id: str) -> str:
    """Find an order by its id."""
    return f"order {order_id}"


@tool(side_effects="none", tags=("db", "reports"))
def count_orders() -> int:
    """Count the orders."""
    return 3


@tool(side_effects="none")
def fs_stat(path: str) -> str:
    """Describe a path."""
    return path


@tool(side_effects="none")
def fs_hash(path: str) -> str:
    """Hash a file."""
    return path


def registry(tmp_path: Path, **tables: ToolConfig) -> ToolRegistry:
    found = ToolRegistry(Settings(home=tmp_path, tools=tables))
    for spec in (find_order, count_orders, fs_stat, fs_hash):
        found.register(spec)
    return found


async def names(found: ToolRegistry, *tools: str | ToolSpec) -> list[str]:
    toolset = await found.toolset(Agent(name="a", tools=tools))
    return list(toolset.names)


async def test_agents_pick_tools_by_name_tag_and_glob(tmp_path: Path) -> None:
    found = registry(tmp_path)
    assert await names(found, "find_order") == ["find_order", "read_result"]
    assert await names(found, "tag:db") == ["find_order", "count_orders", "read_result"]
    assert await names(found, "tag:reports", "fs_*") == [
        "count_orders",
        "fs_stat",
        "fs_hash",
        "read_result",
    ]
    # A tool picked twice (by name and by a glob) is there once.
    assert await names(found, "fs_stat", "fs_?ta?") == ["fs_stat", "read_result"]
    # Built-in tools are in the registry too: picked by name or glob, made per agent.
    assert await names(found, "read_*", "list_dir") == ["read_file", "read_result", "list_dir"]


def test_a_glob_stays_within_one_dotted_part() -> None:
    assert glob_match("github.search_issues", "github.*")
    assert glob_match("github.search_issues", "*.search_*")
    assert not glob_match("github.search_issues", "*")
    assert not glob_match("github.search_issues", "github*")
    assert glob_match("fs_stat", "fs_*")
    assert is_selector("tag:db")
    assert is_selector("fs_*")
    assert not is_selector("github.search")


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("find_ordr", "no tool 'find_ordr'"),
        ("tag:nosuch", "no tool matches tag 'tag:nosuch'"),
        ("db_*", "no tool matches glob 'db_*'"),
        ("github.search", "no MCP server named 'github'"),
        ("mcp:github", "no MCP server named 'github'"),
    ],
)
async def test_a_name_that_picks_nothing_is_a_clear_error_naming_what_exists(
    tmp_path: Path, selector: str, expected: str
) -> None:
    found = registry(tmp_path)
    agent = Agent(name="clerk", tools=[selector])
    with pytest.raises(ConfigError) as checked:
        found.check(agent)  # at submit, before a run exists
    with pytest.raises(ConfigError) as built:
        await found.toolset(agent)
    for error in (checked.value, built.value):
        assert expected in str(error)
    if "MCP" not in expected:
        text = str(checked.value)
        assert "agent 'clerk'" in text
        assert "find_order, fs_hash, fs_stat" in text
        assert "tags: db, reports" in text


async def test_submit_refuses_an_agent_whose_tool_does_not_exist(tmp_path: Path) -> None:
    async with Harness(Settings(home=tmp_path)) as harness:
        with pytest.raises(ConfigError, match="no tool 'word_count'"):
            await harness.submit(Agent(name="a", tools=["word_count"]), "hi")
        assert await harness.list() == []


def test_one_name_is_one_tool(tmp_path: Path) -> None:
    found = registry(tmp_path)
    found.register(find_order)  # the same tool again: nothing changes

    @tool(name="find_order")
    def other(order_id: str) -> str:
        """Another tool of the same name."""
        return order_id

    with pytest.raises(ToolDefinitionError, match="'find_order' is already registered"):
        found.register(other)
    with pytest.raises(ToolDefinitionError, match="'bash' is already registered \\(builtin\\)"):
        found.register(tool(name="bash")(other.function))


def test_tool_tables_add_tags_and_set_the_limit(tmp_path: Path) -> None:
    found = registry(
        tmp_path,
        fs_stat=ToolConfig(name="fs_stat", max_concurrent=3, tags=("files",)),
        bash=ToolConfig(name="bash", max_concurrent=1),
    )
    stat = found.get("fs_stat")
    assert stat is not None
    assert (stat.max_concurrent, stat.tags) == (3, ("files",))
    bash = found.get("bash")
    assert bash is not None
    assert (bash.source, bash.max_concurrent) == ("builtin", 1)
    assert found.register(fs_hash, tags=("files",), max_concurrent=2).max_concurrent == 2


def test_a_tool_table_registers_a_python_function_under_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "registry_test_tools.py").write_text(
        'def find(order_id: str) -> str:\n    """Find an order."""\n    return order_id\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    table = ToolConfig(name="lookup", function="registry_test_tools:find", max_concurrent=2)
    found = ToolRegistry(Settings(home=tmp_path, tools={"lookup": table}))
    entry = found.get("lookup")
    assert entry is not None
    assert (entry.source, entry.max_concurrent) == ("python", 2)
    assert entry.spec.description == "Find an order."
    bad = ToolConfig(name="x", function="registry_test_tools:nothing_here")
    with pytest.raises(ConfigError, match=r"key 'tools.x.function'.*no function 'nothing_here'"):
        ToolRegistry(Settings(home=tmp_path, tools={"x": bad}))


class Gauge:
    """Counts the calls of a tool running at once (all on one event loop)."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.calls = 0

    async def __call__(self, seconds: float) -> str:
        self.now += 1
        self.calls += 1
        self.most = max(self.most, self.now)
        try:
            await asyncio.sleep(seconds)
        finally:
            self.now -= 1
        return "done"


def fan_out(calls: int, seconds: float) -> FunctionModel:
    """A model that makes `calls` parallel calls of `query`, then answers."""

    def answer(request: ModelRequest) -> Message:
        if request.messages[-1].role == "user":
            return reply(None, *(call("query", {"seconds": seconds}) for _ in range(calls)))
        return reply("all done")

    return FunctionModel(answer)


async def test_max_concurrent_holds_across_runs_of_different_agents(tmp_path: Path) -> None:
    gauge = Gauge()
    query = ToolSpec.from_schema(
        name="query",
        description="Query the database.",
        parameters={"type": "object", "properties": {"seconds": {"type": "number"}}},
        function=gauge,
        side_effects="none",
        max_concurrent=2,
    )
    async with Harness(Settings(home=tmp_path)) as harness:
        harness.register_tool(query)
        agents = [
            Agent(name=f"agent{i}", model=fan_out(3, 0.02), tools=["query"]) for i in range(3)
        ]
        run_ids = [await harness.submit(agents[i % 3], "go") for i in range(6)]
        results = [await harness.wait(run_id, timeout=60) for run_id in run_ids]
        slots = harness.registry.slots("query")
    assert all(r.output == "all done" for r in results)
    assert gauge.calls == 18
    assert gauge.most == 2  # never more, and the calls did overlap up to the limit
    assert isinstance(slots, CallSlots)
    assert (slots.peak, slots.running) == (2, 0)


async def test_the_wait_for_a_slot_is_not_part_of_the_tools_timeout(tmp_path: Path) -> None:
    gauge = Gauge()
    query = ToolSpec.from_schema(
        name="query",
        description="Query the database.",
        parameters={"type": "object", "properties": {"seconds": {"type": "number"}}},
        function=gauge,
        side_effects="none",
        timeout=1.0,
        max_concurrent=1,
    )
    async with Harness(Settings(home=tmp_path)) as harness:
        harness.register_tool(query)
        # 15 calls of 0.1 s, one at a time: the last waits 1.4 s, past the 1 s timeout.
        result = await harness.run(Agent(model=fan_out(15, 0.1), tools=["query"]), "go")
    outputs = [m.content for m in result.messages if m.role == "tool"]
    assert outputs == ["done"] * 15
    assert gauge.most == 1


async def test_a_limit_from_the_tool_table_applies_to_a_tool_given_to_the_agent(
    tmp_path: Path,
) -> None:
    gauge = Gauge()
    query = ToolSpec.from_schema(
        name="query",
        description="Query the database.",
        parameters={"type": "object", "properties": {"seconds": {"type": "number"}}},
        function=gauge,
        side_effects="none",
    )
    settings = Settings(home=tmp_path, tools={"query": ToolConfig(name="query", max_concurrent=1)})
    async with Harness(settings) as harness:
        first = Agent(name="one", model=fan_out(3, 0.02), tools=[query])
        second = Agent(name="two", model=fan_out(3, 0.02), tools=[query])
        runs = [await harness.submit(agent, "go") for agent in (first, second)]
        for run_id in runs:
            assert (await harness.wait(run_id, timeout=60)).output == "all done"
    assert (gauge.calls, gauge.most) == (6, 1)
