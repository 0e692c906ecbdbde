"""Event bodies encoded before their transaction, which only puts in the `seq` it gives,
are the very bytes the codec writes in one go."""

from __future__ import annotations

import pytest

from harness.core import Usage
from harness.core.codec import dumps, event_to_dict
from harness.core.events import (
    EventPayload,
    ModelResponded,
    RunEvent,
    RunSubmitted,
    StepStarted,
    ToolCallRef,
    ToolCompleted,
)
from harness.errors import ConfigError
from harness.store._rows import encode_event, encode_payload, event_body_around_seq

PAYLOADS: list[EventPayload] = [
    RunSubmitted(task="What is 2 + 3? ünïcode ✓", agent="ops", parent_run_id=None),
    StepStarted(step=1),
    ModelResponded(
        step=1,
        finish_reason="tool_calls",
        content="",
        usage=Usage(input_tokens=40, output_tokens=2, requests=1),
        tool_calls=(ToolCallRef(id="call_1", name="add"),),
        duration_s=0.2,
    ),
    ToolCompleted(
        step=1,
        call_id="call_1",
        tool="add",
        status="ok",
        ok=True,
        result='{"sum": 5}',
        truncated=False,
        duration_s=0.001,
    ),
]


@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda p: p.type)
def test_a_payload_encoded_before_its_transaction_gives_the_same_body(
    payload: EventPayload,
) -> None:
    event = RunEvent(run_id="run_1", seq=7, ts=1_700_000_000.25, payload=payload)
    body = encode_event(event, encode_payload(payload, "run_1"))
    assert body == encode_event(event) == dumps(event_to_dict(event))


@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda p: p.type)
@pytest.mark.parametrize("run_id", ["run_1", 'run_,"seq":0,"ts":1'])
def test_a_body_encoded_before_its_seq_is_known_gives_the_same_bytes(
    payload: EventPayload, run_id: str
) -> None:
    head, tail = event_body_around_seq(
        run_id, 1_700_000_000.25, payload.type, encode_payload(payload, run_id)
    )
    for seq in (1, 7, 10, 123_456_789):
        event = RunEvent(run_id=run_id, seq=seq, ts=1_700_000_000.25, payload=payload)
        assert f"{head}{seq}{tail}" == dumps(event_to_dict(event))


def test_an_unknown_event_type_is_refused_before_the_transaction() -> None:
    class Invented(StepStarted):
        @property
        def type(self) -> str:  # type: ignore[override]
            return "invented"

    with pytest.raises(ConfigError, match="unknown event type 'invented'"):
        encode_payload(Invented(step=1), "run_1")  # pyright: ignore[reportArgumentType]
