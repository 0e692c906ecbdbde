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
from harness.store._rows import encode_payloads, event_head, event_tail

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


@pytest.mark.parametrize("run_id", ["run_1", 'run_,"seq":0,"ts":1'])
def test_a_body_encoded_before_its_seq_is_known_gives_the_same_bytes(run_id: str) -> None:
    """The store's path: a step's payloads in one call, the run's head once, each event's
    tail, and its seq put in between inside the transaction."""
    encoded = encode_payloads(PAYLOADS, run_id)
    head = event_head(run_id)
    for payload, as_dict in zip(PAYLOADS, encoded, strict=True):
        tail = event_tail(run_id, 1_700_000_000.25, payload.type, as_dict)
        for seq in (1, 7, 10, 123_456_789):
            event = RunEvent(run_id=run_id, seq=seq, ts=1_700_000_000.25, payload=payload)
            assert f"{head}{seq}{tail}" == dumps(event_to_dict(event))


def test_a_payload_that_is_not_json_is_named() -> None:
    with pytest.raises(ConfigError, match="payload of event step_started of run run_1"):
        event_tail("run_1", 1.0, "step_started", {"step": object()})


def test_an_unknown_event_type_is_refused_before_the_transaction() -> None:
    class Invented(StepStarted):
        @property
        def type(self) -> str:  # type: ignore[override]
            return "invented"

    with pytest.raises(ConfigError, match="unknown event type 'invented'"):
        encode_payloads([Invented(step=1)], "run_1")  # pyright: ignore[reportArgumentType]
