"""`tools = ["agent:NAME"]` in harness.toml: checked when the file is read, run as child runs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness import Agent, Harness
from harness.errors import ConfigError
from harness.runtime._catalog import AgentCatalog
from harness.runtime.settings import load_settings
from harness.testing import ScriptedModel, call, reply

BASE = """
[defaults]
model = "openai:some-model"

[agents.boss]
tools = ["agent:researcher", "read_file"]

[agents.researcher]
description = "Finds facts about one topic."
"""


def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    for name in ("HARNESS_MODEL", "HARNESS_STORE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "harness.toml").write_text(text)
    return tmp_path


async def test_an_agent_named_as_a_tool_runs_as_a_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load_settings(_home(tmp_path, monkeypatch, BASE))
    boss = AgentCatalog(settings).get("boss")
    assert boss is not None
    tool = next(t for t in boss.tools if not isinstance(t, str))
    assert (tool.name, tool.side_effects) == ("researcher", "idempotent")
    assert tool.description == "Finds facts about one topic."
    assert settings.agents["boss"].tools == ("read_file", "agent:researcher")
    # The file's boss with a scripted model; the researcher it names, registered here.
    scripted = ScriptedModel([reply(None, call("researcher", {"task": "tides"})), reply("ok")])
    researcher = Agent(name="researcher", model=ScriptedModel([reply("tides are lunar")]))
    async with Harness(settings, agents=(researcher,)) as h:
        result = await h.run(dataclasses.replace(boss, model=scripted), "go")
        children = await h.store.list_runs(parent_run_id=result.run_id, limit=None)
    assert [c.agent for c in children] == ["researcher"]
    assert any(m.role == "tool" and m.content == "tides are lunar" for m in result.messages)


@pytest.mark.parametrize(
    ("tables", "message"),
    [
        (
            '[agents.boss]\ntools = ["agent:ghost"]\n',
            "key 'agents.boss.tools': 'agent:ghost' names no agent (agents of the file: boss)",
        ),
        (
            '[agents.a]\ntools = ["agent:b"]\n[agents.b]\ntools = ["agent:c"]\n'
            '[agents.c]\ntools = ["agent:a"]\n',
            "agents call each other in a cycle: a -> b -> c -> a",
        ),
        ('[agents.a]\ntools = ["agent:a"]\n', "in a cycle: a -> a"),
        ('[agents.a]\ntools = ["agent:not a name"]\n', "'agent:NAME' needs the name of an agent"),
    ],
)
def test_bad_agent_tools_are_named_in_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tables: str, message: str
) -> None:
    home = _home(tmp_path, monkeypatch, '[defaults]\nmodel = "openai:m"\n' + tables)
    with pytest.raises(ConfigError) as caught:
        load_settings(home)
    assert message in str(caught.value)


def test_the_children_table_sets_the_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _home(tmp_path, monkeypatch, "[children]\nmax_depth = 2\nmax_children = 8\n")
    limits = load_settings(home).children
    assert (limits.max_depth, limits.max_children) == (2, 8)
    (home / "harness.toml").write_text("[children]\nmax_depth = 0\n")
    with pytest.raises(ConfigError, match="max_depth"):
        load_settings(home)
