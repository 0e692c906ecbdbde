"""Typed event payloads: their wire format is the one harness always wrote, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest

from harness.core.codec import (
    CodecError,
    dumps,
    event_from_dict,
    event_to_dict,
    payload_from_dict,
    payload_to_dict,
)
from harness.core.events import (
    EVENT_CLASSES,
    AgentMessage,
    ApprovalDecided,
    ApprovalRequested,
    ChildFinished,
    ChildStarted,
    CompletionChecked,
    ContextCompacted,
    EventPayload,
    EventType,
    Handoff,
    HintInjected,
    MessageReceived,
    MessageSent,
    ModelCalled,
    ModelDelta,
    ModelFallback,
    ModelResponded,
    ModelRetry,
    PlanCreated,
    PlanUpdated,
    RunCancelled,
    RunEvent,
    RunFailed,
    RunFinished,
    RunPaused,
    RunRecovered,
    RunResumed,
    RunStarted,
    RunSubmitted,
    RunWaiting,
    StepStarted,
    TextToolCalls,
    ToolCallRef,
    ToolCompleted,
    ToolStarted,
    TriggerFired,
    WaitEnded,
)
from harness.core.usage import Usage

FIXTURES = Path(__file__).parent.parent / "fixtures"

USAGE = Usage(input_tokens=10, output_tokens=5, requests=1, cost_usd=0.25)
USAGE_JSON = (
    '{"input_tokens":10,"output_tokens":5,"cached_tokens":0,"reasoning_tokens":0,'
    '"requests":1,"tool_calls":0,"cost_usd":0.25}'
)

EMITTED: list[tuple[EventPayload, str]] = [
    (
        RunSubmitted(agent="ops", task="count", parent_run_id=None),
        '{"agent":"ops","task":"count","parent_run_id":null}',
    ),
    (
        RunSubmitted(agent="ops", task="count", parent_run_id="run_0", task_type="refund"),
        '{"agent":"ops","task":"count","parent_run_id":"run_0","task_type":"refund"}',
    ),
    (
        RunStarted(agent="ops", model="m", strategy="react", tools=("add",), max_steps=25),
        '{"agent":"ops","model":"m","strategy":"react","tools":["add"],"max_steps":25}',
    ),
    (StepStarted(step=1), '{"step":1}'),
    (
        StepStarted(step=4, wrap_up=True, reason="max_steps"),
        '{"step":4,"wrap_up":true,"reason":"max_steps"}',
    ),
    (
        ModelCalled(step=1, model="m", messages=2, tools=1, stream=False, request_id="req_1"),
        '{"step":1,"model":"m","messages":2,"tools":1,"stream":false,"request_id":"req_1"}',
    ),
    (
        ModelResponded(
            step=1,
            finish_reason="tool_calls",
            content="",
            usage=USAGE,
            tool_calls=(ToolCallRef(id="c1", name="add"),),
            tool_calls_from_text=None,
            duration_s=0.5,
        ),
        '{"step":1,"finish_reason":"tool_calls","content":"","usage":' + USAGE_JSON + ","
        '"tool_calls":[{"id":"c1","name":"add"}],"tool_calls_from_text":null,"duration_s":0.5}',
    ),
    (
        ModelResponded(
            step=2,
            finish_reason="stop",
            content="x",
            usage=USAGE,
            tool_calls=(),
            tool_calls_from_text=TextToolCalls(format="hermes", calls=1, malformed=2),
            duration_s=1.25,
        ),
        '{"step":2,"finish_reason":"stop","content":"x","usage":' + USAGE_JSON + ","
        '"tool_calls":[],"tool_calls_from_text":{"format":"hermes","calls":1,"malformed":2},'
        '"duration_s":1.25}',
    ),
    (ModelDelta(step=1, text="he"), '{"step":1,"text":"he"}'),
    (
        ModelRetry(
            request_id="req_1",
            model="m",
            attempt=1,
            max_attempts=3,
            status=503,
            error="ModelAPIError",
            message="busy",
            delay_s=0.5,
            retry_after_s=None,
            step=2,
        ),
        '{"request_id":"req_1","model":"m","attempt":1,"max_attempts":3,"status":503,'
        '"error":"ModelAPIError","message":"busy","delay_s":0.5,"retry_after_s":null,"step":2}',
    ),
    (
        ModelFallback(
            request_id="req_1",
            from_model="a",
            to_model="b",
            reason="error",
            status=None,
            error="ModelConnectionError",
            message="refused",
            delay_s=0.0,
            step=1,
        ),
        '{"request_id":"req_1","from_model":"a","to_model":"b","reason":"error","status":null,'
        '"error":"ModelConnectionError","message":"refused","delay_s":0.0,"step":1}',
    ),
    (
        ModelFallback(
            request_id="req_1",
            from_model="a",
            to_model="b",
            reason="context_window",
            status=None,
            error=None,
            message=None,
            delay_s=0.0,
            estimated_tokens=900,
            context_window=512,
            step=3,
        ),
        '{"request_id":"req_1","from_model":"a","to_model":"b","reason":"context_window",'
        '"status":null,"error":null,"message":null,"delay_s":0.0,"estimated_tokens":900,'
        '"context_window":512,"step":3}',
    ),
    (AgentMessage(step=2, content="5", final=True), '{"step":2,"content":"5","final":true}'),
    (
        AgentMessage(step=2, content="on it", final=False),
        '{"step":2,"content":"on it","final":false}',
    ),
    (
        ToolStarted(step=1, call_id="c1", tool="add", arguments='{"a": 2}'),
        '{"step":1,"call_id":"c1","tool":"add","arguments":"{\\"a\\": 2}"}',
    ),
    (
        ToolCompleted(
            step=1,
            call_id="c1",
            tool="add",
            status="not_run",
            ok=False,
            result="not run",
            truncated=False,
            duration_s=0.0,
        ),
        '{"step":1,"call_id":"c1","tool":"add","status":"not_run","ok":false,'
        '"result":"not run","truncated":false,"duration_s":0.0}',
    ),
    (
        ApprovalRequested(step=1, call_id="c1", tool="bash", arguments="{}", reason=None),
        '{"step":1,"call_id":"c1","tool":"bash","arguments":"{}","reason":null}',
    ),
    (
        RunWaiting(step=1, reason="approval", call_id="c1"),
        '{"step":1,"reason":"approval","call_id":"c1"}',
    ),
    (
        WaitEnded(step=2, reason="message", call_id="c2", waited_s=1.5, waiting=0),
        '{"step":2,"reason":"message","call_id":"c2","waited_s":1.5,"waiting":0}',
    ),
    (
        MessageSent(to_run="run_b", message_id=7, call_id="c3", content="hello"),
        '{"to_run":"run_b","message_id":7,"call_id":"c3","content":"hello"}',
    ),
    (
        MessageReceived(
            message_id=7, sender="coder", sender_run="run_a", call_id=None, content="hello"
        ),
        '{"message_id":7,"sender":"coder","sender_run":"run_a","call_id":null,"content":"hello"}',
    ),
    (
        ApprovalDecided(step=1, call_id="c1", approved=False, by="user:x", reason="no"),
        '{"step":1,"call_id":"c1","approved":false,"by":"user:x","reason":"no"}',
    ),
    (
        ContextCompacted(
            step=3,
            tier="summarize",
            tokens_before=900,
            tokens_after=300,
            messages_removed=4,
            messages_cut=0,
            summary="so far",
            fallback=None,
            usage=USAGE,
            state={"history_index": 5, "stage": False},
        ),
        '{"step":3,"tier":"summarize","tokens_before":900,"tokens_after":300,'
        '"messages_removed":4,"messages_cut":0,"summary":"so far","fallback":null,"usage":'
        + USAGE_JSON
        + ',"state":{"history_index":5,"stage":false}}',
    ),
    (
        CompletionChecked(
            step=2, check="verifier", passed=False, feedback="2 tests fail", error=None
        ),
        '{"step":2,"check":"verifier","passed":false,"feedback":"2 tests fail","error":null}',
    ),
    (
        CompletionChecked(
            step=2, check="output_type", output_type="Answer", passed=True, errors=(), repair=False
        ),
        '{"step":2,"check":"output_type","output_type":"Answer","passed":true,"errors":[],'
        '"repair":false}',
    ),
    (HintInjected(step=3, hint="try another way"), '{"step":3,"hint":"try another way"}'),
    (
        PlanCreated(step=1, steps=("look", "count"), readable=True),
        '{"step":1,"steps":["look","count"],"readable":true}',
    ),
    (
        PlanUpdated(
            step=4,
            steps=("count",),
            readable=False,
            revision=1,
            failed_step="look",
            reason="no files",
            done=(),
        ),
        '{"step":4,"steps":["count"],"readable":false,"revision":1,"failed_step":"look",'
        '"reason":"no files","done":[]}',
    ),
    (RunPaused(at="step boundary"), '{"at":"step boundary"}'),
    (RunResumed(), "{}"),
    (
        RunRecovered(previous_owner=None, state="RUNNING", owner="w2"),
        '{"previous_owner":null,"state":"RUNNING","owner":"w2"}',
    ),
    (
        RunFinished(output="5", termination="final_answer", complete=True, usage=USAGE),
        '{"output":"5","termination":"final_answer","complete":true,"usage":' + USAGE_JSON + "}",
    ),
    (
        RunFinished(
            output=None,
            termination="max_steps",
            complete=False,
            usage=USAGE,
            detail="it used all 3 of its steps",
            output_valid=False,
            output_errors=("count: field required",),
        ),
        '{"output":null,"termination":"max_steps","complete":false,"usage":' + USAGE_JSON + ","
        '"detail":"it used all 3 of its steps","output_valid":false,'
        '"output_errors":["count: field required"]}',
    ),
    (
        RunFailed(error="boom", error_type="RuntimeError", termination="error", usage=USAGE),
        '{"error":"boom","error_type":"RuntimeError","termination":"error","usage":'
        + USAGE_JSON
        + "}",
    ),
    (
        RunFailed(error="boom", error_type="RuntimeError", termination="error"),
        '{"error":"boom","error_type":"RuntimeError","termination":"error"}',
    ),
    (RunCancelled(by="user:x", reason=None), '{"by":"user:x","reason":null}'),
    (
        Handoff(
            step=2, call_id="c1", from_agent="triage", to_agent="billing", reason=None, count=1
        ),
        '{"step":2,"call_id":"c1","from_agent":"triage","to_agent":"billing",'
        '"reason":null,"count":1}',
    ),
    (
        ChildStarted(
            call_id="c1", child_run_id="run_1", agent="r", task="t", depth=1, existed=False
        ),
        '{"call_id":"c1","child_run_id":"run_1","agent":"r","task":"t","depth":1,"existed":false}',
    ),
    (
        ChildFinished(
            call_id="c1",
            child_run_id="run_1",
            state="COMPLETED",
            termination="final_answer",
            usage=USAGE,
        ),
        '{"call_id":"c1","child_run_id":"run_1","state":"COMPLETED",'
        '"termination":"final_answer","usage":' + USAGE_JSON + "}",
    ),
    (
        TriggerFired(
            trigger="review", source_run_id="run_1", source_seq=7, source_event="run_finished"
        ),
        '{"trigger":"review","source_run_id":"run_1","source_seq":7,"source_event":"run_finished"}',
    ),
]
"""Each event as the emitters build it, and the payload JSON harness wrote for it before
payloads were typed (same keys, same order, the same explicit nulls)."""


@pytest.mark.parametrize(("payload", "wire"), EMITTED, ids=lambda x: type(x).__name__)
def test_the_wire_format_is_the_one_written_before(payload: EventPayload, wire: str) -> None:
    assert dumps(payload_to_dict(payload)) == wire
    assert payload_from_dict(payload.type, json.loads(wire)) == payload


def test_every_event_type_is_emitted_in_the_golden_table() -> None:
    assert {p.type for p, _ in EMITTED} == set(get_args(EventType))


def test_every_event_type_has_exactly_one_class() -> None:
    assert set(EVENT_CLASSES) == set(get_args(EventType))
    assert len(set(EVENT_CLASSES.values())) == len(EVENT_CLASSES)
    for kind, cls in EVENT_CLASSES.items():
        assert cls.type == kind
        assert "".join(w.title() for w in kind.split("_")) == cls.__name__
        assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        assert hasattr(cls, "__slots__")


def test_the_golden_v1_log_decodes_to_classes_and_encodes_to_the_same_bytes() -> None:
    lines = (FIXTURES / "events_v1.jsonl").read_text().splitlines()
    events = [event_from_dict(json.loads(line)) for line in lines]
    assert [type(e.payload) for e in events] == [
        RunStarted,
        StepStarted,
        ModelCalled,
        ModelResponded,
        ToolStarted,
        ToolCompleted,
        StepStarted,
        AgentMessage,
        RunFinished,
    ]
    assert [dumps(event_to_dict(e)) for e in events] == lines


def test_keys_older_logs_lack_decode_to_defaults() -> None:
    lines = (FIXTURES / "events_v1.jsonl").read_text().splitlines()
    started, _, called, responded, *_, message, _ = (
        event_from_dict(json.loads(line)).payload for line in lines
    )
    assert isinstance(started, RunStarted)
    assert started.strategy is None
    assert isinstance(called, ModelCalled)
    assert called.tools is None
    assert isinstance(responded, ModelResponded)
    assert responded.tool_calls_from_text is None
    assert not responded.from_text_recorded
    assert isinstance(message, AgentMessage)
    assert message.final is None


def test_an_event_knows_its_type_from_its_payload() -> None:
    event = RunEvent(run_id="run_1", seq=1, ts=0.0, payload=HintInjected(step=1, hint="h"))
    assert event.type == "hint_injected"
    match event.payload:
        case HintInjected(hint=hint):
            assert hint == "h"
        case _:
            pytest.fail("a subscriber dispatches on the class")


def envelope(kind: object, payload: object) -> dict[str, object]:
    return {"v": 1, "run_id": "run_1", "seq": 1, "ts": 0.0, "type": kind, "payload": payload}


@pytest.mark.parametrize(
    ("kind", "payload", "error"),
    [
        ("exploded", {}, "unknown event type 'exploded'"),
        (None, {}, "unknown event type None"),
        ("run_paused", {}, r"event 'run_paused' \(run run_1, seq 1\): the required key 'at'"),
        ("hint_injected", {"step": 1}, "the required key 'hint' is missing"),
        ("hint_injected", {"step": "1", "hint": "h"}, "'step': expected int, got str"),
        ("hint_injected", {"step": True, "hint": "h"}, "'step': expected int, got bool"),
        ("run_paused", {"at": None}, "'at': expected str, got null"),
        (
            "run_finished",
            {"output": "x", "termination": "t", "complete": True, "usage": 3},
            "'usage': expected dict",
        ),
        ("plan_created", {"step": 1, "steps": "a", "readable": True}, "'steps': expected list"),
        ("run_resumed", [], "expected a JSON object"),
    ],
)
def test_bad_payloads_raise_a_clear_codec_error(kind: object, payload: object, error: str) -> None:
    with pytest.raises(CodecError, match=error):
        event_from_dict(envelope(kind, payload))


def test_keys_a_later_release_added_are_ignored_not_refused() -> None:
    """A newer worker sharing the store may write keys this release does not know yet."""
    later = {"at": "2026-12-01T10:00:00Z", "why": "a field of a later release"}
    event = event_from_dict(envelope("run_paused", later))
    assert event.payload == RunPaused(at="2026-12-01T10:00:00Z")
    nested = {
        "step": 1,
        "finish_reason": "stop",
        "content": "",
        "usage": {"input_tokens": 3, "thinking_budget": 9},
        "tool_calls": [{"id": "c", "name": "t", "origin": "later"}],
        "duration_s": 0.1,
        "region": "eu",
    }
    responded = event_from_dict(envelope("model_responded", nested)).payload
    assert isinstance(responded, ModelResponded)
    assert responded.usage.input_tokens == 3
    assert responded.tool_calls == (ToolCallRef(id="c", name="t"),)


def test_a_float_written_as_an_integer_encodes_as_it_was_written() -> None:
    data = {"step": 1, "text": "x"}
    assert payload_to_dict(payload_from_dict("model_delta", data)) == data
    wire = (
        '{"step":1,"call_id":"c","tool":"t","status":"ok","ok":true,"result":"",'
        '"truncated":false,"duration_s":0}'
    )
    assert dumps(payload_to_dict(payload_from_dict("tool_completed", json.loads(wire)))) == wire
