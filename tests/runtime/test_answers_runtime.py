"""Structured output, completion checks and context management in the durable runtime."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from harness import Agent, Harness, Limits, Message, ModelRequest, tool
from harness.core import RunResult
from harness.core.events import CompletionChecked, ContextCompacted, payloads
from harness.gateway import ModelProfile
from harness.memory import ContextPolicy
from harness.runtime import Settings
from harness.runtime.runs import agent_from_metadata, agent_metadata
from harness.testing import FakeOpenAIServer, FakeReply, FunctionModel, ScriptedModel, call, reply
from harness.tools.sandbox import Sandbox

sys.path.insert(0, str(Path(__file__).parent / "processes"))
from owner_process import OwnerProcess

HARNESS = str(Path(sys.executable).parent / "harness")
SUMMARY_PROMPTS = ("You compress the history", "An AI agent's context window")


class Report(BaseModel):
    city: str
    celsius: float


SCHEMA = {
    "title": "weather",
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
}


@tool(side_effects="none")
def lookup(city: str) -> str:
    """Look up the weather of a city."""
    return f"{city}: 21 degrees " + "and more details " * 60


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARNESS_HOME": str(home), "NO_COLOR": "1"}
    env.pop("HARNESS_MODEL", None)
    return subprocess.run([HARNESS, *args], env=env, capture_output=True, text=True, timeout=60)


# --- structured output -----------------------------------------------------------------------


async def test_structured_output_is_kept_by_the_store(tmp_path: Path) -> None:
    answers = iter(['{"city": "Paris"}', '{"city": "Paris", "celsius": 21}'])
    agent = Agent(
        name="typed", model=FunctionModel(lambda request: next(answers)), output_type=Report
    )
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, "Weather in Paris?")
        stored = await h.messages(result.run_id)
    assert result.data == Report(city="Paris", celsius=21)
    assert result.output_valid is True
    assert stored == list(result.messages)
    assert "'Report'" in (stored[0].content or "")  # the instructions are in the stored prompt

    async with Harness(Settings(home=tmp_path), execute=False) as h:  # another process
        again = await h.wait(result.run_id)
    assert again.data == {"city": "Paris", "celsius": 21.0}
    assert (again.output_valid, again.output_errors) == (True, ())
    async with Harness(Settings(home=tmp_path), agents=(agent,), execute=False) as h:
        typed = await h.wait(result.run_id)
    assert typed.data == Report(city="Paris", celsius=21)

    shown = cli(tmp_path, "runs", "show", result.run_id, "--json")
    assert shown.returncode == 0, shown.stderr
    record = json.loads(shown.stdout)
    assert record["data"] == {"city": "Paris", "celsius": 21.0}
    assert record["output_valid"] is True


async def test_a_list_of_models_is_stored_as_json(tmp_path: Path) -> None:
    answer = '[{"city": "Paris", "celsius": 21}, {"city": "Oslo", "celsius": -3}]'
    agent = Agent(name="many", model=ScriptedModel([answer]), output_type=list[Report])
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, "Weather?")
    async with Harness(Settings(home=tmp_path), execute=False) as h:
        again = await h.wait(result.run_id)
    assert result.data == [Report(city="Paris", celsius=21), Report(city="Oslo", celsius=-3)]
    assert again.data == [{"city": "Paris", "celsius": 21.0}, {"city": "Oslo", "celsius": -3.0}]


async def test_an_answer_that_never_fits_is_stored_with_its_errors(tmp_path: Path) -> None:
    agent = Agent(name="typed", model=FunctionModel(lambda r: '{"city": 1}'), output_type=SCHEMA)
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, "Weather?")
    async with Harness(Settings(home=tmp_path), execute=False) as h:
        again = await h.wait(result.run_id)
    assert result.output_valid is False
    assert again.output_valid is False
    assert again.data == {"city": 1}
    assert again.output_errors == result.output_errors
    assert again.output_errors


async def test_a_stopped_runs_detail_is_kept_by_the_store(tmp_path: Path) -> None:
    model = FunctionModel(lambda r: reply(None, call("lookup", {"city": "Oslo"})))
    agent = Agent(name="busy", model=model, tools=[lookup], limits=Limits(max_steps=2))
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, "Weather?")
    async with Harness(Settings(home=tmp_path), execute=False) as h:
        again = await h.wait(result.run_id)
    assert result.termination == "max_steps"
    assert again.detail == result.detail == "it used all 2 of its steps"


def test_a_json_schema_and_a_shell_verifier_travel_between_processes() -> None:
    agent = Agent(
        name="portable",
        model="local",
        output_type=SCHEMA,
        verifier="pytest -q",
        context={"trim_at": 0.7},
    )
    data = agent_metadata(agent)
    assert data is not None
    back = agent_from_metadata(json.loads(json.dumps(data)))
    assert (back.output_type, back.verifier, back.context) == (
        SCHEMA,
        "pytest -q",
        {"trim_at": 0.7},
    )
    policy = ContextPolicy(context_window=4096, keep_last_turns=2)
    with_policy = agent_from_metadata(agent_metadata(Agent(model="local", context=policy)) or {})
    assert with_policy.context == policy
    assert agent_metadata(Agent(model="local", output_type=Report)) is None
    assert agent_metadata(Agent(model="local", verifier=lambda answer, ctx: True)) is None


# --- native structured output over HTTP ------------------------------------------------------


async def run_over_http(
    tmp_path: Path, script: list[FakeReply], agent: Agent, **changes: Any
) -> tuple[RunResult, list[Any]]:
    with FakeOpenAIServer(script) as server:
        profile = ModelProfile(
            name="p", model="fake-model", base_url=server.base_url, max_retries=0, **changes
        )
        async with Harness(Settings(home=tmp_path, profiles={"p": profile})) as h:
            result = await h.run(agent, "Weather in Paris?", timeout=60)
        return result, [r.body for r in server.requests]


async def test_the_schema_is_sent_natively_only_on_the_turn_without_tools(tmp_path: Path) -> None:
    script = [
        FakeReply.tool_call("lookup", {"city": "Paris"}),
        FakeReply.tool_call("lookup", {"city": "Paris"}),
        FakeReply.text('{"city": "Paris", "celsius": 21}'),
    ]
    agent = Agent(
        name="w", model="p", tools=[lookup], output_type=Report, limits=Limits(max_steps=2)
    )
    result, bodies = await run_over_http(tmp_path, script, agent)
    assert result.termination == "max_steps"
    assert result.data == Report(city="Paris", celsius=21)
    assert ["tools" in b for b in bodies] == [True, True, False]
    assert ["response_format" in b for b in bodies] == [False, False, True]
    sent = bodies[2]["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["name"] == "Report"
    assert sent["json_schema"]["schema"]["required"] == ["city", "celsius"]


async def test_an_agent_without_tools_asks_natively_unless_the_profile_cannot(
    tmp_path: Path,
) -> None:
    script = [FakeReply.text('{"city": "Paris", "celsius": 21}')]
    agent = Agent(name="w", model="p", output_type=Report)
    result, bodies = await run_over_http(tmp_path / "a", script, agent)
    assert result.output_valid is True
    assert "response_format" in bodies[0]
    result, bodies = await run_over_http(tmp_path / "b", script, agent, structured_output=False)
    assert result.output_valid is True
    assert "response_format" not in bodies[0]
    assert "'Report'" in bodies[0]["messages"][0]["content"]  # the prompt still says it


# --- completion checks -----------------------------------------------------------------------


async def test_a_shell_verifier_runs_in_the_workspace_sandboxed(
    tmp_path: Path, workspace: Path, sandbox: Sandbox
) -> None:
    sandbox.prepare_workspace(workspace)
    model = ScriptedModel(
        [
            reply("The report is written."),
            reply(None, call("bash", {"command": "echo 'Paris: 21' > report.md"})),
            reply("The report is written now."),
        ]
    )
    agent = Agent(
        name="writer",
        model=model,
        tools=["bash"],
        workspace=workspace,
        verifier='test -s report.md && echo "checked: $HARNESS_ANSWER"',
    )
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, "Write report.md with the weather.", timeout=120)
        events = [e async for e in h.events(result.run_id)]
    assert result.output == "The report is written now."
    assert (workspace / "report.md").read_text() == "Paris: 21\n"
    checks = payloads(events, CompletionChecked)
    assert [(c.check, c.passed) for c in checks] == [("verifier", False), ("verifier", True)]
    assert "checked: The report is written now." in (checks[1].feedback or "")
    told = model.requests[1].messages[-1].content or ""
    assert "The check `test -s report.md" in told
    assert "did not pass the completion check" in told


# --- context management ----------------------------------------------------------------------


def inspecting_model(summary: str, *, steps: int = 15) -> tuple[FunctionModel, list[ModelRequest]]:
    """Calls `lookup` `steps` times, then answers; summaries are `summary`."""
    taken: list[ModelRequest] = []

    async def act(request: ModelRequest) -> Message | str:
        if (request.messages[0].content or "").startswith(SUMMARY_PROMPTS):
            return summary
        taken.append(request)
        if len(taken) > steps or not request.tools:
            return "done"
        return reply(None, call("lookup", {"city": f"City {len(taken)}"}))

    return FunctionModel(act), taken


POLICY = ContextPolicy(context_window=2000, trim_at=0.5, summarize_at=0.5, keep_last_turns=1)


async def test_compactions_are_stored_and_replay_shows_the_whole_history(tmp_path: Path) -> None:
    model, taken = inspecting_model("SUMMARY: fifteen cities looked up.")
    agent = Agent(name="ctx", model=model, tools=[lookup], context=POLICY)
    async with Harness(Settings(home=tmp_path)) as h:
        result = await h.run(agent, "Look up many cities.")
        events = await h.store.events(result.run_id)
        stored = await h.messages(result.run_id)
    assert result.ok
    compactions = payloads(events, ContextCompacted)
    assert compactions
    assert any(c.summary for c in compactions)
    assert all(c.tokens_after < c.tokens_before for c in compactions)
    assert stored == list(result.messages)
    assert sum(1 for m in stored if m.role == "tool") == 15
    assert len(taken[-1].messages) < len(stored)  # what was sent was compacted
    assert result.usage.requests == len(model.requests)  # the summary requests count too
    assert len(model.requests) > len(taken)
    replayed = cli(tmp_path, "replay", result.run_id, "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert len(replayed.stdout.splitlines()) == len(stored)


async def test_a_run_taken_over_after_a_sigkill_goes_on_from_its_last_compaction(
    tmp_path: Path, store_target: str
) -> None:
    with OwnerProcess(tmp_path, store_target, "compactor", "Look up many cities.") as first:
        run_id = first.run_id
        assert run_id is not None
        assert first.line() == "summarized"  # a summary was made and stored: killed here
        first.kill()

    second, taken = inspecting_model("SECOND SUMMARY")
    again = Agent(name="ctx", model=second, tools=[lookup], context=POLICY)
    async with Harness(Settings(home=tmp_path), store=store_target, agents=(again,)) as h:
        result = await h.wait(run_id, timeout=60)
        events = await h.store.events(run_id)
    assert result.ok
    assert any(e.type == "run_recovered" for e in events), [e.type for e in events]
    resumed = taken[0].messages
    assert any("FIRST SUMMARY" in (m.content or "") for m in resumed)
    assert not any("SECOND SUMMARY" in (m.content or "") for m in resumed)
