"""`[tools.NAME]` tables, agents of harness.toml that pick tools by tag and glob, and
`harness tools list` in a user's own project directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.runtime._catalog import AgentCatalog
from harness.runtime.registry import ToolRegistry
from harness.runtime.settings import load_settings
from harness.testing import FakeOpenAIServer, FakeReply

HARNESS = str(Path(sys.executable).parent / "harness")

TOOLS = '''
from harness import tool


@tool(side_effects="none", tags=("db",), max_concurrent=2)
def find_order(order_id: str) -> str:
    """Find an order by its id."""
    return order_id


def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())
'''

FILE = f"""
[mcp.time]
command = {json.dumps(sys.executable)}
args = ["-m", "mcp_server_time"]

[tools.lookup]
function = "shop_tools:find_order"
max_concurrent = 4
tags = ["orders"]

[tools.time.get_current_time]
tags = ["clock"]
max_concurrent = 1

[tools.bash]
max_concurrent = 2

[approvals]
tools = {{ lookup = "ask" }}

[agents.clerk]
tools = ["tag:db", "read_*", "shop_tools:word_count"]

[agents.clock]
tools = ["tag:clock"]
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's project: harness.toml and a module of tools, HARNESS_HOME pointing at it."""
    (tmp_path / "harness.toml").write_text(FILE)
    (tmp_path / "shop_tools.py").write_text(TOOLS)
    for name in ("HARNESS_MODEL", "HARNESS_STORE"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def harness(project: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HARNESS_HOME": str(project),
        "PYTHONPATH": str(project),
        "NO_COLOR": "1",
        "COLUMNS": "250",
    }
    for name in ("HARNESS_MODEL", "HARNESS_STORE"):
        env.pop(name, None)
    return subprocess.run(
        [HARNESS, *args], env=env, capture_output=True, text=True, timeout=120, cwd=cwd or project
    )


def test_the_file_tables_reach_the_registry_and_the_agents(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(project))
    settings = load_settings(project)
    assert settings.tools["time.get_current_time"].tags == ("clock",)  # [tools.S.T] read flat
    assert settings.agents["clerk"].picks == ("tag:db", "read_*")
    assert settings.agents["clerk"].python_tools == ("shop_tools:word_count",)
    registry = ToolRegistry(settings)
    lookup = registry.get("lookup")
    assert lookup is not None
    assert (lookup.max_concurrent, lookup.tags) == (4, ("db", "orders"))
    clerk = AgentCatalog(settings).get("clerk")
    assert clerk is not None
    assert registry.check(clerk) == {"read_file", "read_result"}


def test_the_environment_sets_a_tool_tables_keys(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_TOOLS__LOOKUP__MAX_CONCURRENT", "7")
    monkeypatch.setenv("HARNESS_TOOLS__TIME_GET_CURRENT_TIME__TAGS", "clock,now")
    settings = load_settings(project)
    assert settings.tools["lookup"].max_concurrent == 7
    assert settings.tools["time.get_current_time"].tags == ("clock", "now")
    monkeypatch.setenv("HARNESS_TOOLS__LOOKUP__MAX_CONCURRENT", "0")
    with pytest.raises(ConfigError, match="HARNESS_TOOLS__LOOKUP__MAX_CONCURRENT"):
        load_settings(project)


async def test_an_agent_of_the_file_gets_its_picks(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(project))
    settings = load_settings(project)
    registry = ToolRegistry(settings)
    clerk = AgentCatalog(settings).get("clerk")
    assert clerk is not None
    toolset = await registry.toolset(clerk)
    assert list(toolset.names) == ["word_count", "lookup", "read_file", "read_result"]
    slots = toolset.slots("lookup")
    assert slots is not None
    assert slots.limit == 4
    await registry.aclose()


BAD = [
    (
        "[tools.x]\nmax_concurrent = 0\n",
        "key 'tools.x.max_concurrent'",
        "greater than or equal to 1",
    ),
    ('[tools.x]\nfunction = "not a ref"\n', "key 'tools.x.function'", "should match pattern"),
    ('[tools.x]\ntags = ["two words"]\n', "key 'tools.x.tags'", "tag 'two words'"),
    ("[tools.x]\ncolour = 1\n", "key 'tools.x.colour'", "Extra inputs are not permitted"),
    ('[tools."a b"]\nmax_concurrent = 1\n', "key 'tools'", "a tool is named NAME or SERVER.TOOL"),
    (
        "[tools.github.search]\nmax_concurrent = 1\n",
        "key 'tools.github.search'",
        "no MCP server 'github'",
    ),
    ('[agents.a]\ntools = ["github.*"]\n', "key 'agents.a.tools'", "no MCP server 'github'"),
    ('[agents.a]\ntools = ["tag:two words"]\n', "key 'agents.a.tools'", "a tag is 1 to 64"),
    ('[agents.a]\ntools = ["lookup"]\n', "key 'agents.a.tools'", "no [tools.lookup] table"),
]


@pytest.mark.parametrize(("text", "key", "problem"), BAD)
def test_a_bad_tool_table_names_the_file_and_the_key(
    tmp_path: Path, text: str, key: str, problem: str
) -> None:
    (tmp_path / "harness.toml").write_text(text)
    with pytest.raises(ConfigError) as error:
        load_settings(tmp_path)
    message = str(error.value)
    assert str(tmp_path / "harness.toml") in message
    assert key in message
    assert problem in message


def test_tools_list_shows_the_registry_with_mcp_tools_by_server(project: Path) -> None:
    done = harness(project, "tools", "list", "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in map(json.loads, done.stdout.splitlines())}
    assert {"bash", "read_file", "read_result", "lookup", "word_count"} <= set(rows)
    clock = rows["time.get_current_time"]
    assert clock["source"] == "mcp:time"
    assert clock["model_name"] == "get_current_time"
    assert (clock["max_concurrent"], clock["tags"]) == (1, ["clock"])
    assert clock["parameters"]["properties"]["timezone"]["type"] == "string"
    assert clock["timeout_s"] == 30.0
    lookup = rows["lookup"]
    assert (lookup["source"], lookup["side_effects"], lookup["approval"]) == (
        "python",
        "none",
        "ask",
    )
    assert (lookup["max_concurrent"], lookup["tags"]) == (4, ["db", "orders"])
    assert rows["bash"]["source"] == "builtin"
    assert rows["bash"]["max_concurrent"] == 2
    assert rows["bash"]["side_effects"] == "destructive"
    assert rows["word_count"]["source"] == "python"  # a tool an agent of the file names


def test_tools_list_of_one_agent_in_a_table(project: Path) -> None:
    done = harness(project, "tools", "list", "--agent", "clock")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "tools of agent clock" in lines[0]
    header = lines[1].split()
    assert header[:4] == ["NAME", "SOURCE", "SIDE", "EFFECTS"]
    assert "MAX CONC." in lines[1]
    body = "\n".join(lines[2:])
    assert "time.get_current_time (get_current_time)" in body
    assert "mcp:time" in body
    assert "timezone: string" in body
    assert "time.convert_time" not in body  # the agent picked by tag only


def test_tools_list_mistakes_are_one_clear_line(
    project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    unknown = harness(project, "tools", "list", "--agent", "ghost")
    assert unknown.returncode == 2
    assert "no agent named 'ghost' (known: clerk, clock)" in unknown.stderr
    flag = harness(project, "tools", "list", "--colour")
    assert flag.returncode == 2
    assert "No such option" in flag.stderr
    broken = tmp_path_factory.mktemp("broken")
    (broken / "harness.toml").write_text("[tools.x]\nmax_concurrent = -1\n")
    bad = harness(broken, "tools", "list")
    assert bad.returncode == 2
    assert "key 'tools.x.max_concurrent'" in bad.stderr
    for done in (unknown, flag, bad):
        assert "Traceback" not in done.stderr
    empty = tmp_path_factory.mktemp("empty")
    (empty / "harness.toml").write_text('[agents.solo]\ntools = ["fs_*"]\n')
    missing = harness(empty, "tools", "list", "--agent", "solo")
    assert missing.returncode == 2
    assert "agent 'solo': no tool matches glob 'fs_*'. Tools: bash, edit_file" in missing.stderr


def test_run_tools_takes_the_registry_s_tools_by_name_and_tag(project: Path) -> None:
    (project / "harness.toml").write_text(
        '[tools.count]\nfunction = "shop_tools:word_count"\ntags = ["text"]\n'
    )
    work = project / "work"
    work.mkdir()
    script = [
        FakeReply.tool_call("count", {"text": "one two three"}),
        FakeReply.tool_call("lookup_or_none", {}),
        FakeReply.text("three words"),
    ]
    with FakeOpenAIServer(script) as server:
        done = harness(
            project,
            *("run", "--json", "--model", "openai:fake", "--base-url", server.base_url),
            *("--tools", "tag:text,list_*", "count the words"),
            cwd=work,  # the file tools' workspace: not the home, which holds the store
        )
        offered = [t["function"]["name"] for t in server.requests[0].body["tools"]]
    assert done.returncode == 0, done.stderr
    assert sorted(offered) == ["count", "list_dir", "read_result"]
    events = [json.loads(line) for line in done.stdout.splitlines()]
    results = [e["payload"] for e in events if e["type"] == "tool_completed"]
    assert (results[0]["tool"], results[0]["ok"], results[0]["result"]) == ("count", True, "3")
    assert results[1]["status"] == "unknown_tool"  # what the model named is not offered


@pytest.mark.parametrize(
    ("tools", "says"),
    [
        ("count,nope", "--tools: no tool is named 'nope' (built-in: "),
        ("nope", "[tools.NAME]: count; a Python function becomes a tool by name"),
        ("github.search", "names a tool of MCP server 'github', which is not configured"),
        ("count,count", "--tools: 'count' is named twice"),
    ],
)
def test_run_tools_refuses_what_the_registry_does_not_have(
    project: Path, tools: str, says: str
) -> None:
    (project / "harness.toml").write_text('[tools.count]\nfunction = "shop_tools:word_count"\n')
    done = harness(project, "run", "--model", "openai:fake", "--tools", tools, "go")
    assert done.returncode == 2
    assert says in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr
