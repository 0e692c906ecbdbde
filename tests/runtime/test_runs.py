import json
from pathlib import Path

from harness import Agent, Limits
from harness.core.codec import result_to_dict
from harness.core.messages import Message
from harness.core.results import RunResult
from harness.gateway.model import ModelSettings, ResponseFormat
from harness.runtime.runs import agent_from_metadata, agent_metadata, result_data
from harness.tools import ApprovalPolicy, ApprovalRule, tool


def test_an_agent_of_builtin_tools_travels_through_the_store_whole() -> None:
    agent = Agent(
        name="ops",
        model="local",
        base_url="http://127.0.0.1:8081/v1",
        tools=["bash", "search"],
        limits=Limits(max_steps=7),
        workspace=Path("/srv/ws"),
        network=True,
        mcp=["git"],
        settings=ModelSettings(
            temperature=0.2,
            top_p=0.9,
            max_output_tokens=512,
            seed=7,
            stop=("END",),
            parallel_tool_calls=False,
            extra_body={"top_k": 20},
            response_format=ResponseFormat(name="report", schema={"type": "object"}, strict=True),
        ),
        approvals=ApprovalPolicy(
            rules=(
                ApprovalRule(
                    tool="bash", when={"command": "git push"}, decision="deny", reason="never"
                ),
            ),
            tools={"search": "ask"},
        ),
    )
    data = agent_metadata(agent)
    assert data is not None
    rebuilt = agent_from_metadata(json.loads(json.dumps(data)))
    for field in (
        "name",
        "model",
        "base_url",
        "instructions",
        "limits",
        "workspace",
        "network",
        "allow_unsandboxed",
        "approvals",
        "settings",
    ):
        assert getattr(rebuilt, field) == getattr(agent, field), field
    assert tuple(rebuilt.tools) == ("bash", "search")
    assert tuple(rebuilt.mcp) == ("git",)


def test_an_agent_with_python_tools_cannot_travel() -> None:
    @tool
    def local_only() -> str:
        """Only in this process."""
        return "x"

    assert agent_metadata(Agent(tools=[local_only])) is None


def test_result_data_keeps_what_the_codec_writes_of_data_validity_errors_and_detail() -> None:
    plain = Agent(name="plain", model="m")
    said = (Message.user("hi"), Message(role="assistant", content="ok"))
    results = [
        RunResult(run_id="r1", output="5", termination="final_answer", complete=True),
        RunResult(
            run_id="r2",
            output="{}",
            termination="max_steps",
            complete=False,
            messages=said,
            detail="it used all 3 of its steps",
            output_valid=False,
            output_errors=("$.n: required",),
        ),
        RunResult(
            run_id="r3",
            output='{"n": 1}',
            termination="final_answer",
            complete=True,
            messages=said,
            data={"n": [1, None]},
            output_valid=True,
        ),
    ]
    keys = ("data", "output_valid", "output_errors", "detail")
    for result in results:
        encoded = result_to_dict(result)
        expected = {key: encoded[key] for key in keys if key in encoded}
        kept = result_data(result, plain)
        assert kept == expected
        assert list(kept) == list(expected)  # the same order: the same stored JSON
    assert result_data(results[0], plain) == {}
