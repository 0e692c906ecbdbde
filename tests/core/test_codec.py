import json
from pathlib import Path

import pytest

from harness.core import Message, RunEvent, ToolCall, Usage
from harness.core.codec import (
    SCHEMA_VERSION,
    CodecError,
    dumps,
    event_from_dict,
    event_to_dict,
    loads,
    message_from_dict,
    message_to_dict,
    usage_from_dict,
    usage_to_dict,
)
from harness.core.events import RunFinished, ToolCompleted

FIXTURES = Path(__file__).parent.parent / "fixtures"

MESSAGES = [
    Message.system("be brief"),
    Message.user("héllo ✓"),
    Message.assistant(
        "let me look",
        [ToolCall(id="c1", name="bash", arguments='{"command": "ls"}')],
        reasoning="think",
    ),
    Message.tool("c1", "a.txt\n", name="bash"),
    Message(role="assistant", content=None, tokens=12, provider_data={"signature": "x"}),
]


@pytest.mark.parametrize("message", MESSAGES)
def test_message_round_trip(message: Message) -> None:
    assert message_from_dict(loads(dumps(message_to_dict(message)))) == message


def test_event_round_trip() -> None:
    done = ToolCompleted(
        step=1,
        call_id="c1",
        tool="add",
        status="ok",
        ok=True,
        result="5",
        truncated=False,
        duration_s=0.5,
    )
    event = RunEvent(run_id="run_1", seq=3, ts=1.5, payload=done)
    encoded = event_to_dict(event)
    assert encoded["v"] == SCHEMA_VERSION
    assert set(encoded) == {"v", "run_id", "seq", "ts", "type", "payload"}
    assert event_from_dict(loads(dumps(encoded))) == event


def test_usage_round_trip_and_missing_counters_are_zero() -> None:
    usage = Usage(input_tokens=3, output_tokens=4, cached_tokens=1, requests=2, cost_usd=0.25)
    assert usage_from_dict(usage_to_dict(usage)) == usage
    assert usage_from_dict({"input_tokens": 7}) == Usage(input_tokens=7)


def test_golden_v1_log_still_decodes() -> None:
    """A log written by schema version 1 must keep replaying in every later release."""
    lines = (FIXTURES / "events_v1.jsonl").read_text().splitlines()
    events = [event_from_dict(json.loads(line)) for line in lines]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[0].type == "run_started"
    assert events[-1].payload == RunFinished(
        output="5",
        termination="final_answer",
        complete=True,
        usage=Usage(input_tokens=25, output_tokens=6, requests=2, tool_calls=1),
    )
    messages = [
        message_from_dict(json.loads(line))
        for line in (FIXTURES / "messages_v1.jsonl").read_text().splitlines()
    ]
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert messages[2].tool_calls[0].arguments == '{"a": 2, "b": 3}'
    assert messages[3].tool_call_id == messages[2].tool_calls[0].id


def test_unknown_version_role_and_type_are_rejected() -> None:
    with pytest.raises(CodecError, match="schema version 99"):
        message_from_dict({"v": 99, "role": "user", "content": "x"})
    with pytest.raises(CodecError, match="unknown message role 'robot'"):
        message_from_dict({"v": 1, "role": "robot"})
    with pytest.raises(CodecError, match="unknown event type 'exploded'"):
        event_from_dict({"v": 1, "run_id": "r", "seq": 1, "ts": 0, "type": "exploded"})
    with pytest.raises(CodecError, match="JSON object"):
        loads("[1, 2]")
