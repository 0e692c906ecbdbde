# ruff: noqa: E501  (the tables read best one case per line)
"""`[agents]`, `[task_types]` and `[experiments]` of harness.toml: precedence and bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.agent.spec import AgentSpec
from harness.errors import ConfigError
from harness.runtime._agents_config import Overrides
from harness.runtime._catalog import AgentCatalog
from harness.runtime._explain import explain
from harness.runtime.settings import load_settings

FILE = """
[defaults]
model = "openai:default-model"
limits = { max_seconds = 100, max_tool_calls = 7 }

[agents.support]
model = "openai:agent-model"
instructions = "You answer customers."
tools = ["read_file"]
limits = { max_steps = 20, max_cost_usd = 0.5 }

[agents.bare]
tools = []

[task_types.refund]
agent = "support"
strategy = "plan_execute"
limits = { max_steps = 8 }

[task_types.quick]
model = "openai:quick-model"

[experiments.refund-model]
task_type = "refund"
variants = { a = { model = "openai:model-a", weight = 50 }, b = { instructions = "Be brief.", limits = { max_cost_usd = 0.1 }, weight = 50 } }
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("HARNESS_MODEL", "HARNESS_STORE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "harness.toml").write_text(FILE)
    return tmp_path


# (agent, task type, variant, explicit overrides) -> the effective value of one key, and its source
PRECEDENCE = [
    # [defaults] under everything, built-in defaults under [defaults]
    ("bare", None, None, None, "model", "openai:default-model", "defaults.model"),
    ("bare", None, None, None, "strategy", "react", "built-in default"),
    ("bare", None, None, None, "limits.max_steps", 25, "built-in default"),
    ("bare", None, None, None, "limits.max_seconds", 100, "defaults.limits.max_seconds"),
    # the agent over [defaults], key by key (its limits do not hide the others)
    ("support", None, None, None, "model", "openai:agent-model", "agents.support.model"),
    ("support", None, None, None, "limits.max_steps", 20, "agents.support.limits.max_steps"),
    ("support", None, None, None, "limits.max_tool_calls", 7, "defaults.limits.max_tool_calls"),
    # the task type over the agent
    ("support", "refund", None, None, "strategy", "plan_execute", "task_types.refund.strategy"),
    ("support", "refund", None, None, "limits.max_steps", 8, "task_types.refund.limits.max_steps"),
    (
        "support",
        "refund",
        None,
        None,
        "limits.max_cost_usd",
        0.5,
        "agents.support.limits.max_cost_usd",
    ),
    ("bare", "quick", None, None, "model", "openai:quick-model", "task_types.quick.model"),
    # the variant over the task type
    (
        "support",
        "refund",
        "a",
        None,
        "model",
        "openai:model-a",
        "experiments.refund-model.variants.a.model",
    ),
    ("support", "refund", "b", None, "model", "openai:agent-model", "agents.support.model"),
    (
        "support",
        "refund",
        "b",
        None,
        "instructions",
        "Be brief.",
        "experiments.refund-model.variants.b.instructions",
    ),
    (
        "support",
        "refund",
        "b",
        None,
        "limits.max_cost_usd",
        0.1,
        "experiments.refund-model.variants.b.limits.max_cost_usd",
    ),
    # an explicit argument over everything
    (
        "support",
        "refund",
        "a",
        Overrides(model="openai:given"),
        "model",
        "openai:given",
        "argument",
    ),
    (
        "support",
        "refund",
        None,
        Overrides(limits={"max_steps": 2}),
        "limits.max_steps",
        2,
        "argument",
    ),
    ("support", "refund", None, Overrides(strategy="react"), "strategy", "react", "argument"),
]


@pytest.mark.parametrize(
    ("agent", "task_type", "variant", "overrides", "key", "value", "source"), PRECEDENCE
)
def test_each_value_comes_from_the_highest_level_that_sets_it(
    home: Path,
    agent: str,
    task_type: str | None,
    variant: str | None,
    overrides: Overrides | None,
    key: str,
    value: object,
    source: str,
) -> None:
    settings = load_settings(home)
    catalog = AgentCatalog(settings)
    base = catalog.get(agent)
    assert base is not None
    spec = catalog.effective(
        base,
        task_type=task_type,
        variant=("refund-model", variant) if variant else None,
        overrides=overrides,
    )
    assert _value(spec, key) == value
    if variant is None:  # `config show` explains runs before their variant is drawn
        shown = {
            s.key: s
            for s in explain(settings, agent=agent, task_type=task_type, overrides=overrides)
        }
        assert (shown[key].value, shown[key].source) == (value, source)


def _value(spec: AgentSpec, key: str) -> object:
    if key.startswith("limits."):
        return getattr(spec.limits, key.removeprefix("limits."))
    return getattr(spec, key)


def test_a_python_agent_gets_the_levels_above_it_and_keeps_its_own_object(home: Path) -> None:
    catalog = AgentCatalog(load_settings(home))
    ops = AgentSpec(name="ops", model="openai:python-model", strategy="react")
    assert catalog.effective(ops, task_type=None, variant=None, overrides=None) is ops
    once = catalog.effective(ops, task_type="refund", variant=None, overrides=None)
    again = catalog.effective(ops, task_type="refund", variant=None, overrides=None)
    assert once is again
    assert (once.strategy, once.limits.max_steps, once.model) == (
        "plan_execute",
        8,
        "openai:python-model",
    )


def test_the_environment_sets_keys_of_every_section(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_AGENTS__SUPPORT__MODEL", "openai:from-env")
    monkeypatch.setenv("HARNESS_AGENTS__SUPPORT__TOOLS", "read_file,list_dir")
    monkeypatch.setenv("HARNESS_TASK_TYPES__REFUND__LIMITS__MAX_STEPS", "3")
    monkeypatch.setenv("HARNESS_EXPERIMENTS__REFUND_MODEL__VARIANTS__B__WEIGHT", "0")
    monkeypatch.setenv("HARNESS_EXPERIMENTS__REFUND_MODEL__KEEP", "a")
    monkeypatch.setenv("HARNESS_DEFAULTS__STRATEGY", "plan_execute")
    settings = load_settings(home)
    assert settings.agents["support"].model == "openai:from-env"
    assert settings.agents["support"].builtin_tools == ("read_file", "list_dir")
    assert settings.task_types["refund"].overrides.limits == {"max_steps": 3}
    experiment = settings.experiments["refund-model"]
    assert ([v.weight for v in experiment.variants], experiment.keep) == ([50, 0], "a")
    shown = {s.key: s.source for s in explain(settings, agent="support", task_type="refund")}
    assert shown["model"] == "HARNESS_AGENTS__SUPPORT__MODEL"
    assert shown["limits.max_steps"] == "HARNESS_TASK_TYPES__REFUND__LIMITS__MAX_STEPS"
    assert settings.default_strategy == "plan_execute"


BAD = [
    ('[agents.a]\nmodel = "nope"\n', "key 'agents.a.model'", "nope"),
    ('[agents.a]\ntools = ["bsh"]\n', "key 'agents.a.tools'", "no built-in tool 'bsh'"),
    ('[agents.a]\ntools = ["mcp:orders"]\n', "key 'agents.a.tools'", "no MCP server 'orders'"),
    ('[agents.a]\ntools = ["x:y:z"]\n', "key 'agents.a.tools'", "package.module:function"),
    ('[agents.a]\nstrategy = "loop"\n', "key 'agents.a.strategy'", "unknown strategy 'loop'"),
    (
        '[agents.a]\ninstructions_file = "gone.md"\n',
        "key 'agents.a.instructions_file'",
        "cannot read",
    ),
    ('[agents.a]\ninstructions = "x"\ninstructions_file = "x.md"\n', "key 'agents.a'", "not both"),
    ('[agents.a]\noutput_schema = "schema.json"\n', "key 'agents.a.output_schema'", "is not JSON"),
    (
        "[agents.a]\nlimits = { max_steps = 0 }\n",
        "key 'agents.a.limits.max_steps'",
        "greater than or equal to 1",
    ),
    ('[agents.a]\ncolour = "red"\n', "key 'agents.a.colour'", "Extra inputs are not permitted"),
    ('[task_types.refund]\nagent = "ghost"\n', "key 'task_types.refund.agent'", "no agent 'ghost'"),
    ('[task_types."two words"]\nstrategy = "react"\n', "key 'task_types'", "not a label"),
    (
        '[experiments.e]\ntask_type = "t"\nagent = "a"\nvariants = { a = { weight = 1 }, b = { weight = 1 } }\n',
        "key 'experiments.e'",
        "exactly one of 'task_type' or 'agent'",
    ),
    (
        '[experiments.e]\ntask_type = "t"\nvariants = { a = { weight = 1 } }\n',
        "key 'experiments.e.variants'",
        "at least 2",
    ),
    (
        '[experiments.e]\ntask_type = "t"\nvariants = { a = { weight = 0 }, b = { weight = 0 } }\n',
        "key 'experiments.e.variants'",
        "every weight is 0",
    ),
    (
        '[experiments.e]\ntask_type = "t"\nkeep = "c"\nvariants = { a = { weight = 1 }, b = { weight = 1 } }\n',
        "key 'experiments.e'",
        "keep = 'c' is not a variant",
    ),
    (
        '[experiments.e]\ntask_type = "t"\nvariants = { a = { weight = 1, model = "nope" }, b = { weight = 1 } }\n',
        "key 'experiments.e.variants.a.model'",
        "nope",
    ),
    (
        '[experiments.e]\ntask_type = "t"\nvariants = { a = { weight = 1 }, b = { weight = 1 } }\n'
        '[experiments.f]\ntask_type = "t"\nvariants = { a = { weight = 1 }, b = { weight = 1 } }\n',
        "key 'experiments.f.task_type'",
        "already splits the runs of task type 't'",
    ),
]


@pytest.mark.parametrize(("text", "where", "problem"), BAD)
def test_a_bad_table_gives_one_error_naming_the_file_and_the_key(
    tmp_path: Path, text: str, where: str, problem: str
) -> None:
    (tmp_path / "harness.toml").write_text(text)
    (tmp_path / "x.md").write_text("x")
    (tmp_path / "schema.json").write_text("{not json")
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'harness.toml'}: {where}"), message
    assert problem in message
    assert message.count("harness.toml") == 1, message  # one error, not a cascade


def test_a_bad_environment_value_names_the_variable(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_TASK_TYPES__REFUND__STRATEGY", "loop")
    with pytest.raises(
        ConfigError,
        match=r"^environment variable HARNESS_TASK_TYPES__REFUND__STRATEGY: key 'task_types.refund.strategy': .*unknown strategy 'loop'",
    ):
        load_settings(home)


async def test_a_task_type_brings_its_agent_and_an_explicit_argument_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.core.events import RunStarted
    from harness.runtime.harness import Harness
    from harness.testing import FakeOpenAIServer, FakeReply

    for name in ("HARNESS_MODEL", "HARNESS_STORE"):
        monkeypatch.delenv(name, raising=False)
    with FakeOpenAIServer([FakeReply.text("one"), FakeReply.text("two")]) as server:
        (tmp_path / "harness.toml").write_text(
            f'[agents.support]\nmodel = "openai:m"\nbase_url = "{server.base_url}"\ntools = []\n'
            '[task_types.refund]\nagent = "support"\nlimits = { max_steps = 3 }\n'
        )
        async with Harness(load_settings(tmp_path), store=str(tmp_path / "h.db")) as h:
            first = await h.submit(None, "go", task_type="refund")
            second = await h.submit(
                None, "go", task_type="refund", overrides=Overrides(limits={"max_steps": 2})
            )
            for run_id in (first, second):
                await h.wait(run_id, timeout=60)
            started = [
                next(
                    e.payload for e in await h.store.events(r) if isinstance(e.payload, RunStarted)
                )
                for r in (first, second)
            ]
            record = await h.get(second)
            with pytest.raises(ConfigError, match="no agent given"):
                await h.submit(None, "go", task_type="other")
            with pytest.raises(ConfigError, match="no agent named 'ghost' \\(known: support\\)"):
                await h.submit("ghost", "go")
    assert [(s.agent, s.max_steps) for s in started] == [("support", 3), ("support", 2)]
    assert record.metadata["overrides"] == {"limits": {"max_steps": 2}}
