"""Approval policies and the audit log, through the real loop with a scripted model."""

import json

import pytest

from harness.agent import AgentLoop, AgentSpec
from harness.core import Message, RunEvent, RunResult
from harness.errors import ConfigError
from harness.runtime.bus import EventBus, RunRecorder
from harness.testing import ScriptedModel, call, reply
from harness.tools import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    ApprovalRule,
    MemoryAuditLog,
    Toolset,
    ToolSpec,
    tool,
)

RAN: list[str] = []


@tool
def shell(command: str) -> str:
    """Pretend to run a command."""
    RAN.append(command)
    return f"ran {command}"


@tool(approval="ask")
def deploy(env: str) -> str:
    """Deploy somewhere."""
    RAN.append(f"deploy {env}")
    return "deployed"


class Approver:
    def __init__(self, *answers: ApprovalDecision) -> None:
        self.answers = list(answers)
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return self.answers.pop(0)


async def run(
    calls: list[object],
    policy: ApprovalPolicy,
    approver: Approver | None,
    tools: tuple[ToolSpec, ...] = (shell, deploy),
) -> tuple[list[RunEvent], RunResult, MemoryAuditLog]:
    RAN.clear()
    model = ScriptedModel([reply(None, *calls), reply("finished")])  # type: ignore[arg-type]
    audit = MemoryAuditLog()
    recorder = RunRecorder("run_a", EventBus())
    loop = AgentLoop(
        AgentSpec(model=model, approvals=policy),
        model=model,
        toolset=Toolset(tools),
        sink=recorder,
        approver=approver,
        audit=audit,
    )
    result = await loop.run("run_a", [Message.system("s"), Message.user("u")])
    return recorder.events, result, audit


def tool_messages(result: RunResult) -> dict[str, str]:
    return {m.tool_call_id or "": m.content or "" for m in result.messages if m.role == "tool"}


async def test_rules_on_arguments_ask_for_some_commands_only() -> None:
    policy = ApprovalPolicy(
        rules=(
            ApprovalRule(
                tool="shell",
                when={"command": r"git push|rm -rf"},
                decision="ask",
                reason="publishing or deleting",
            ),
        )
    )
    approver = Approver(ApprovalDecision(approved=True, by="user:ann"))
    calls = [
        call("shell", {"command": "ls"}, id="a"),
        call("shell", {"command": "git push origin main"}, id="b"),
    ]
    events, _result, audit = await run(calls, policy, approver)
    assert [r.call_id for r in approver.requests] == ["b"]
    assert approver.requests[0].reason == "publishing or deleting"
    assert RAN == ["ls", "git push origin main"]
    records = {r.call_id: r for r in audit.for_run("run_a")}
    assert (records["a"].decision, records["a"].decided_by) == ("auto", "policy")
    assert (records["b"].decision, records["b"].decided_by) == ("ask", "user:ann")
    kinds = [e.type for e in events]
    assert kinds.count("approval_requested") == 1
    assert "run_waiting" in kinds


async def test_a_denial_reaches_the_model_with_its_reason_and_nothing_runs() -> None:
    approver = Approver(ApprovalDecision(approved=False, by="user:bob", reason="not on Friday"))
    events, result, audit = await run(
        [call("deploy", {"env": "prod"}, id="d")], ApprovalPolicy(), approver
    )
    assert RAN == []
    text = tool_messages(result)["d"]
    assert "denied by user:bob" in text
    assert "not on Friday" in text
    completed = next(e for e in events if e.type == "tool_completed")
    assert completed.payload.status == "denied"
    assert result.output == "finished"
    (record,) = audit.records
    assert (record.approved, record.status, record.reason) == (False, "denied", "not on Friday")


async def test_deny_policy_and_per_agent_tool_settings() -> None:
    policy = ApprovalPolicy(tools={"shell": "deny", "deploy": "auto"})
    _, result, _ = await run(
        [call("shell", {"command": "ls"}, id="s"), call("deploy", {"env": "dev"}, id="d")],
        policy,
        None,
    )
    assert RAN == ["deploy dev"]
    assert "denied by policy" in tool_messages(result)["s"]


async def test_without_an_approver_calls_that_ask_are_denied() -> None:
    _, result, _ = await run([call("deploy", {"env": "prod"}, id="d")], ApprovalPolicy(), None)
    assert RAN == []
    assert "no one is attached to approve" in tool_messages(result)["d"]


async def test_invalid_calls_fail_without_asking_anyone() -> None:
    approver = Approver()
    events, _result, audit = await run(
        [call("deploy", {"where": "prod"}, id="d")], ApprovalPolicy(), approver
    )
    assert approver.requests == []
    completed = next(e for e in events if e.type == "tool_completed")
    assert completed.payload.status == "invalid_arguments"
    assert audit.records[0].approved is False
    assert audit.records[0].decided_by == "validation"


async def test_every_call_is_audited_with_a_digest_of_its_result() -> None:
    _, _result, audit = await run(
        [call("shell", {"command": "echo 1"}, id="x")], ApprovalPolicy(), None
    )
    (record,) = audit.records
    assert json.loads(record.arguments) == {"command": "echo 1"}
    assert record.status == "ok"
    assert record.result_chars == len("ran echo 1")
    assert len(record.result_sha256) == 64
    assert record.duration_s >= 0


def test_a_bad_pattern_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not a valid regular expression"):
        ApprovalRule(tool="bash", when={"command": "(unclosed"})
