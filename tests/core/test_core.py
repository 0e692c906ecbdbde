import dataclasses
import time

import pytest

from harness.core import EVENT_TYPES, Message, ToolCall, Usage, new_id, summarize


def test_messages_are_frozen_and_keyword_only() -> None:
    message = Message.user("hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.content = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Message("user", "hi")  # type: ignore[misc]


def test_constructors_set_roles_and_links() -> None:
    call = ToolCall(id="c1", name="bash", arguments="{}")
    assert Message.assistant(None, [call]).tool_calls == (call,)
    answer = Message.tool("c1", "done", name="bash")
    assert (answer.role, answer.tool_call_id, answer.name) == ("tool", "c1", "bash")


def test_usage_adds_up() -> None:
    total = Usage(input_tokens=1, output_tokens=2, requests=1) + Usage(
        input_tokens=10, output_tokens=20, requests=1, tool_calls=3, cost_usd=0.5
    )
    assert total == Usage(input_tokens=11, output_tokens=22, requests=2, tool_calls=3, cost_usd=0.5)
    assert total.total_tokens == 33


def test_with_tool_calls_is_adding_only_tool_calls() -> None:
    usage = Usage(
        input_tokens=7,
        output_tokens=5,
        cached_tokens=2,
        reasoning_tokens=1,
        requests=3,
        tool_calls=4,
        cost_usd=0.25,
    )
    assert usage.with_tool_calls(2) == usage + Usage(tool_calls=2)
    assert usage.with_tool_calls(2).tool_calls == 6


def test_ids_are_unique_and_sort_by_creation() -> None:
    ids = [new_id("run") for _ in range(2000)]
    assert len(set(ids)) == 2000
    assert all(i.startswith("run_") and len(i) == 30 for i in ids)
    assert ids[0][:14] <= ids[-1][:14]


def _decoded(made: str) -> int:
    """The 130-bit number an id's 26 characters write, ten bits a pair."""
    digits = "0123456789abcdefghijklmnopqrstuv"
    return int("".join(f"{digits.index(c):05b}" for c in made.partition("_")[2]), 2)


def test_an_id_writes_its_milliseconds_then_80_random_bits() -> None:
    made: list[tuple[int, str, int]] = []
    for _ in range(3):  # the first characters are kept for 256 ms: made anew after
        before = time.time_ns() // 1_000_000
        made += [(before, new_id("call"), time.time_ns() // 1_000_000) for _ in range(500)]
        time.sleep(0.26)
    for before, made_id, after in made:
        number = _decoded(made_id)
        assert before <= number >> 82 <= after
        assert number & 3 == 0
    randoms = [_decoded(i) >> 2 & (2**80 - 1) for _, i, _ in made]
    for bit in range(80):  # every random bit varies
        assert 0 < sum(r >> bit & 1 for r in randoms) < len(randoms)


def test_summaries_never_exceed_200_characters() -> None:
    assert summarize("a\n  b") == "a b"
    long = summarize("x" * 1000)
    assert len(long) == 200
    assert long.endswith("…")
    assert summarize(None) == ""


def test_event_vocabulary_of_the_design_is_complete() -> None:
    design = {
        "run_submitted",
        "run_started",
        "step_started",
        "model_called",
        "model_responded",
        "model_retry",
        "model_fallback",
        "agent_message",
        "tool_started",
        "tool_completed",
        "approval_requested",
        "approval_decided",
        "context_compacted",
        "hint_injected",
        "plan_created",
        "plan_updated",
        "run_waiting",
        "run_paused",
        "run_resumed",
        "run_recovered",
        "run_finished",
        "run_failed",
        "run_cancelled",
    }
    assert design <= EVENT_TYPES


def test_with_tokens_keeps_every_other_field() -> None:
    message = Message(
        role="assistant",
        content="text",
        tool_calls=(ToolCall(id="c1", name="add", arguments="{}"),),
        tool_call_id="c0",
        name="n",
        reasoning="why",
        tokens=None,
        tokens_source=None,
        provider_data={"signature": "s"},
    )
    expected = dataclasses.replace(message, tokens=7, tokens_source="reported")
    assert message.with_tokens(7, "reported") == expected
    # a field added to Message later must be copied too: this lists them all
    assert {f.name for f in dataclasses.fields(Message)} == {
        "role",
        "content",
        "tool_calls",
        "tool_call_id",
        "name",
        "reasoning",
        "tokens",
        "tokens_source",
        "provider_data",
    }
