"""What the loop hands its sink, and when: the ground the durable runtime stands on."""

import pytest

from harness.agent import AgentLoop, AgentSpec
from harness.agent.loop import UNKNOWN_OUTCOME
from harness.core import Message, ToolCall, Usage
from harness.core.events import EventPayload
from harness.errors import RunInterrupted
from harness.testing import ScriptedModel, call, reply
from harness.tools import Toolset, tool

APPENDED: list[str] = []


@tool(side_effects="idempotent")
def look(path: str) -> str:
    """Look at a path (safe to repeat)."""
    APPENDED.append(f"look {path}")
    return f"saw {path}"


@tool(side_effects="mutating")
def append(line: str) -> str:
    """Append a line somewhere (not safe to repeat)."""
    APPENDED.append(f"append {line}")
    return "appended"


class Journal:
    """A RunSink that writes down the order of everything it is handed."""

    def __init__(self, interrupt_at: int | None = None) -> None:
        self.entries: list[str] = []
        self.checkpoints = 0
        self.interrupt_at = interrupt_at
        self.usage = Usage()

    def emit(self, payload: EventPayload) -> None:
        self.entries.append(f"event {payload.type}")

    def message(self, message: Message) -> None:
        self.entries.append(f"message {message.role}")

    def report_usage(self, total: Usage) -> None:
        self.usage = total

    async def commit(self) -> None:
        self.entries.append("commit")

    async def checkpoint(self) -> None:
        self.checkpoints += 1
        self.entries.append("checkpoint")
        if self.checkpoints == self.interrupt_at:
            raise RunInterrupted("pause")

    async def boundary(self) -> None:
        await self.checkpoint()

    async def announce(self) -> None:
        self.entries.append("announce")


def loop_for(model: ScriptedModel, journal: Journal) -> AgentLoop:
    return AgentLoop(
        AgentSpec(model=model), model=model, toolset=Toolset([look, append]), sink=journal
    )  # type: ignore[arg-type]


async def test_calls_are_durable_before_they_run_and_results_after() -> None:
    APPENDED.clear()
    model = ScriptedModel([reply(None, call("append", {"line": "x"})), reply("done")])
    journal = Journal()
    await loop_for(model, journal).run("r", [Message.system("s"), Message.user("u")])
    entries = journal.entries
    before_call = entries.index("commit", entries.index("message assistant"))
    assert entries.index("event tool_started") < before_call
    assert entries.index("event tool_completed") > before_call
    assert entries.index("message tool") < entries.index("checkpoint")


async def test_each_model_call_is_announced_before_the_model_is_asked() -> None:
    model = ScriptedModel([reply(None, call("look", {"path": "x"})), reply("done")])
    journal = Journal()
    await loop_for(model, journal).run("r", [Message.system("s"), Message.user("u")])
    entries = journal.entries
    called = [i for i, entry in enumerate(entries) if entry == "event model_called"]
    assert len(called) == 2
    for index in called:
        assert entries[index + 1] == "announce"


async def test_results_of_calls_safe_to_redo_wait_for_the_next_commit() -> None:
    model = ScriptedModel([reply(None, call("look", {"path": "x"})), reply("done")])
    journal = Journal()
    await loop_for(model, journal).run("r", [Message.system("s"), Message.user("u")])
    entries = journal.entries
    assert "commit" not in entries[entries.index("event tool_completed") :]
    assert entries.count("checkpoint") == 1  # the boundary after the safe call, nothing more


async def test_an_interrupt_at_a_boundary_passes_through_the_loop() -> None:
    APPENDED.clear()
    model = ScriptedModel([reply(None, call("append", {"line": "x"})), reply("done")])
    journal = Journal(interrupt_at=1)  # the boundary after step 1
    with pytest.raises(RunInterrupted):
        await loop_for(model, journal).run("r", [Message.system("s"), Message.user("u")])
    assert APPENDED == ["append x"]
    assert len(model.requests) == 1


async def test_a_resumed_run_reruns_only_calls_that_are_safe_to_repeat() -> None:
    APPENDED.clear()
    interrupted = [
        Message.system("s"), Message.user("u"),
        Message.assistant(None, [
            ToolCall(id="a", name="look", arguments='{"path": "x"}'),
            ToolCall(id="b", name="append", arguments='{"line": "y"}'),
        ]),
    ]  # fmt: skip
    model = ScriptedModel([reply("finished")])
    journal = Journal()
    result = await loop_for(model, journal).run("r", list(interrupted))
    assert APPENDED == ["look x"]
    answers = {m.tool_call_id: m.content for m in result.messages if m.role == "tool"}
    assert answers == {"a": "saw x", "b": UNKNOWN_OUTCOME}
    sent = model.requests[0].messages
    assert [m.role for m in sent] == ["system", "user", "assistant", "tool", "tool"]
    assert result.output == "finished"
    assert result.termination == "final_answer"


async def test_a_reply_is_durable_before_calls_that_are_safe_to_repeat_run() -> None:
    model = ScriptedModel([reply(None, call("look", {"path": "x"})), reply("done")])
    journal = Journal()
    await loop_for(model, journal).run("r", [Message.system("s"), Message.user("u")])
    entries = journal.entries
    answered = entries.index("message assistant")
    assert entries.index("event model_responded") < answered
    reply_commit = entries.index("commit", answered)  # the first commit after the reply
    assert entries.index("event tool_completed") > reply_commit


async def test_a_final_answer_is_durable_before_a_verifier_checks_it() -> None:
    model = ScriptedModel([reply("done")])
    journal = Journal()
    spec = AgentSpec(model=model, verifier=lambda answer: answer == "done")
    loop = AgentLoop(spec, model=model, toolset=Toolset([look]), sink=journal)  # type: ignore[arg-type]
    await loop.run("r", [Message.system("s"), Message.user("u")])
    entries = journal.entries
    answered = entries.index("message assistant")
    assert entries[answered + 1] == "commit"
    assert entries.index("event completion_checked") > answered + 1


async def test_a_final_answer_without_checks_commits_with_the_end_of_the_run() -> None:
    model = ScriptedModel([reply("done")])
    journal = Journal()
    await loop_for(model, journal).run("r", [Message.system("s"), Message.user("u")])
    entries = journal.entries
    assert "commit" not in entries[entries.index("message assistant") :]
