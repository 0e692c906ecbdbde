"""The window manager: tiers, carried-forward summaries, and requests that always fit."""

from __future__ import annotations

import json

import pytest

from harness.core.codec import payload_from_dict, payload_to_dict
from harness.core.events import ContextCompacted
from harness.core.messages import Message, ToolDefinition
from harness.core.usage import Usage
from harness.errors import ConfigError
from harness.gateway.profiles import ModelProfile
from harness.memory import Compaction, ContextPolicy, ContextState, TokenCounter, WindowManager
from harness.memory._summary import STAGE_INSTRUCTIONS, SUMMARY_INSTRUCTIONS

from .conftest import (
    SYSTEM,
    TASK,
    TOOLS,
    assert_valid,
    conversation,
    failing_summarizer,
    summarizer,
    text_of,
    turn,
)

WINDOW = 4000
CUT_NOTE = "characters cut here to fit the context window"


def manager(**policy: object) -> WindowManager:
    return WindowManager(ContextPolicy(context_window=WINDOW, **policy))  # type: ignore[arg-type]


def filled(window: WindowManager, share: float) -> list[Message]:
    """A conversation of whole turns just above `share` of the window."""
    messages = [SYSTEM, TASK]
    i = 0
    while window.counter.count(messages, TOOLS) <= share * WINDOW:
        messages += turn(i, chars=300)
        i += 1
    return messages


def last_turns(messages: list[Message], n: int) -> list[Message]:
    starts = [i for i, m in enumerate(messages) if m.role == "assistant"]
    return messages[starts[-n] :]


def fits(window: WindowManager, sent: tuple[Message, ...]) -> bool:
    return window.counter.count(sent, TOOLS) <= window.policy.budget


async def test_below_the_first_threshold_nothing_changes() -> None:
    window = manager()
    messages = filled(window, 0.5)
    model = summarizer()
    prepared = await window.prepare(messages, TOOLS, summarizer=model)
    assert prepared.messages == tuple(messages)
    assert prepared.compaction is None
    assert prepared.tokens == window.counter.count(messages, TOOLS)
    assert model.requests == []


async def test_trim_removes_old_turns_and_keeps_system_task_and_last_turns() -> None:
    window = manager(keep_last_turns=3)
    messages = filled(window, 0.65)
    model = summarizer()
    prepared = await window.prepare(messages, TOOLS, summarizer=model)
    sent, compaction = list(prepared.messages), prepared.compaction
    assert compaction is not None
    assert compaction.tier == "trim"
    assert compaction.fallback is None
    assert model.requests == []
    assert sent[:2] == [SYSTEM, TASK]
    assert sent[2].role == "user"
    assert f"{compaction.messages_removed} earlier messages" in (sent[2].content or "")
    assert sent[-6:] == last_turns(messages, 3)
    assert len(sent) == len(messages) - compaction.messages_removed + 1
    assert compaction.tokens_before > 0.6 * WINDOW
    assert compaction.tokens_after <= 0.5 * WINDOW
    assert compaction.tokens_after == prepared.tokens == window.counter.count(sent, TOOLS)
    assert_valid(sent)


async def test_summarize_calls_the_summarizer_once_and_places_one_summary() -> None:
    window = manager(keep_last_turns=2)
    messages = filled(window, 0.85)
    model = summarizer("Listed src/: 42 Python files; largest is loop.py.")
    prepared = await window.prepare(messages, TOOLS, summarizer=model)
    compaction = prepared.compaction
    assert compaction is not None
    assert compaction.tier == "summarize"
    assert len(model.requests) == 1
    request = model.requests[0]
    assert request.messages[0].content == SUMMARY_INSTRUCTIONS.format(
        words=window.policy.summary_tokens * 2 // 3
    )
    assert (TASK.content or "") in (request.messages[1].content or "")
    assert "Step 0: looking further." in (request.messages[1].content or "")
    assert request.settings.max_output_tokens == window.policy.summary_tokens
    sent = list(prepared.messages)
    summaries = [m for m in sent if "Listed src/" in (m.content or "")]
    assert len(summaries) == 1
    assert sent[:3] == [SYSTEM, TASK, summaries[0]]
    assert sent[3:] == last_turns(messages, 2)
    assert len(sent) == 7
    assert compaction.summary == "Listed src/: 42 Python files; largest is loop.py."
    assert compaction.usage.requests == 1
    assert compaction.messages_removed == len(messages) - 2 - 4
    assert compaction.state.history_index == len(messages) - 4
    assert fits(window, prepared.messages)
    assert_valid(sent)


async def test_a_summary_is_carried_forward_and_updated() -> None:
    window = manager(keep_last_turns=2, trim_at=0.8)
    messages = filled(window, 0.85)
    model = summarizer("FIRST SUMMARY")
    first = await window.prepare(messages, TOOLS, summarizer=model)
    assert first.compaction is not None
    summary_message = first.messages[2]
    newer = turn(100, chars=200)
    messages += newer
    second = await window.prepare(messages, TOOLS, summarizer=model)
    assert second.compaction is None
    assert list(second.messages) == [*first.messages, *newer]
    assert second.messages[2] == summary_message
    assert len(model.requests) == 1

    i = 200
    while (await window.prepare(messages, TOOLS, summarizer=model)).compaction is None:
        messages += turn(i, chars=300)
        i += 1
    assert len(model.requests) == 2
    update = model.requests[1].messages[1].content or ""
    assert "The summary so far:\nFIRST SUMMARY" in update
    assert "Step 0: looking further." not in update
    assert "Step 100: looking further." in update


async def test_stage_summary_replaces_everything_after_the_task() -> None:
    window = manager()
    messages = filled(window, 0.96)
    model = summarizer("STAGE: 42 files counted; next, list the largest.")
    prepared = await window.prepare(messages, TOOLS, summarizer=model)
    compaction = prepared.compaction
    assert compaction is not None
    assert compaction.tier == "stage_summary"
    assert (model.requests[0].messages[0].content or "").startswith(STAGE_INSTRUCTIONS[:40])
    assert len(prepared.messages) == 3
    assert prepared.messages[:2] == (SYSTEM, TASK)
    stage = prepared.messages[2]
    assert stage.role == "user"
    assert "STAGE: 42 files counted" in (stage.content or "")
    assert "Continue the task from this summary" in (stage.content or "")
    assert compaction.state == ContextState(
        history_index=len(messages), summary=compaction.summary, stage=True
    )
    newer = turn(50)
    after = await window.prepare([*messages, *newer], TOOLS, summarizer=model)
    assert list(after.messages) == [SYSTEM, TASK, stage, *newer]


@pytest.mark.parametrize("broken", ["raises", "none", "empty"])
async def test_a_summary_that_cannot_be_made_falls_back_to_trimming(broken: str) -> None:
    window = manager(keep_last_turns=2)
    messages = filled(window, 0.85)
    model = {"raises": failing_summarizer(), "none": None, "empty": summarizer("   ")}[broken]
    prepared = await window.prepare(messages, TOOLS, summarizer=model)
    compaction = prepared.compaction
    assert compaction is not None
    assert compaction.tier == "trim"
    reason = {
        "raises": "RuntimeError: summarizer is down",
        "none": "no summarizer model",
        "empty": "answered without text",
    }[broken]
    assert reason in (compaction.fallback or "")
    assert compaction.summary is None
    assert compaction.tokens_after <= 0.5 * WINDOW
    assert list(prepared.messages[:2]) == [SYSTEM, TASK]
    assert list(prepared.messages[-4:]) == last_turns(messages, 2)
    assert_valid(prepared.messages)


async def test_a_single_huge_tool_result_is_cut_to_fit() -> None:
    window = manager()
    huge = turn(7, chars=WINDOW * 40, kind="json")
    messages = [*conversation(2), *huge]
    prepared = await window.prepare(messages, TOOLS, summarizer=summarizer())
    assert fits(window, prepared.messages)
    assert prepared.messages[:2] == (SYSTEM, TASK)
    last = prepared.messages[-1]
    assert last.role == "tool"
    assert last.tool_call_id == huge[-1].tool_call_id
    assert CUT_NOTE in (last.content or "")
    assert (last.content or "")[:100] == (huge[-1].content or "")[:100]
    assert prepared.messages[-2] == huge[0]
    assert_valid(prepared.messages)
    compaction = prepared.compaction
    assert compaction is not None
    assert compaction.messages_cut == 1
    # the same cut is made again on the next request, but reported once
    messages += turn(8)
    again = await window.prepare(messages, TOOLS, summarizer=summarizer())
    assert again.compaction is None or again.compaction.messages_cut == 0
    assert fits(window, again.messages)
    assert any(CUT_NOTE in (m.content or "") for m in again.messages)


async def test_a_system_prompt_and_task_bigger_than_the_window_are_cut_not_dropped() -> None:
    window = manager()
    system = Message.system(text_of("prose", WINDOW * 10))
    task = Message.user(text_of("code", WINDOW * 10))
    messages = [system, task, *turn(1)]
    prepared = await window.prepare(messages, TOOLS)
    assert fits(window, prepared.messages)
    assert [m.role for m in prepared.messages] == ["system", "user", "assistant", "tool"]
    assert CUT_NOTE in (prepared.messages[0].content or "")
    assert CUT_NOTE in (prepared.messages[1].content or "")
    assert prepared.messages[2:] == tuple(messages[2:])


async def test_tools_bigger_than_the_window_are_a_clear_error() -> None:
    window = manager()
    tools = tuple(
        ToolDefinition(name=f"tool_{i}", description=text_of("prose", 2000)) for i in range(20)
    )
    with pytest.raises(ConfigError, match="larger context_window, fewer tools"):
        await window.prepare(conversation(1), tools)


async def test_a_resumed_manager_continues_from_the_compaction_state() -> None:
    window = manager(keep_last_turns=2)
    messages = filled(window, 0.85)
    first = await window.prepare(messages, TOOLS, summarizer=summarizer("SUMMARY"))
    assert first.compaction is not None
    stored = payload_to_dict(first.compaction.event(step=3))
    event = payload_from_dict("context_compacted", json.loads(json.dumps(stored)))
    assert isinstance(event, ContextCompacted)
    assert event.tokens_before == first.compaction.tokens_before
    assert event.tokens_after == first.compaction.tokens_after
    assert event.tier == "summarize"
    messages += turn(60)
    resumed = WindowManager(window.policy, state=ContextState.from_event(event))
    a = await window.prepare(messages, TOOLS)
    b = await resumed.prepare(messages, TOOLS)
    assert a.messages == b.messages


async def test_a_different_conversation_starts_from_scratch() -> None:
    window = manager()
    await window.prepare(filled(window, 0.96), TOOLS, summarizer=summarizer())
    assert window.state.history_index > 0
    other = conversation(2)
    prepared = await window.prepare(other, TOOLS)
    assert prepared.messages == tuple(other)
    assert window.state == ContextState()


async def test_the_loop_feeds_reported_usage_through_observe() -> None:
    window = manager(keep_last_turns=1)
    messages = conversation(3)
    prepared = await window.prepare(messages, TOOLS)
    window.observe(prepared.messages, TOOLS, Usage(input_tokens=3000))
    longer = [*messages, *turn(9)]
    nxt = await window.prepare(longer, TOOLS, summarizer=summarizer())
    assert nxt.compaction is not None  # 3000 reported + the new turn is above 60 %
    assert nxt.compaction.tokens_before > 3000


def test_policy_checks_its_values() -> None:
    with pytest.raises(ConfigError, match="trim_at equal to summarize_at"):
        ContextPolicy(context_window=8000, trim_at=0.9, summarize_at=0.8)
    with pytest.raises(ConfigError, match="reserve_output_tokens"):
        ContextPolicy(context_window=8000, reserve_output_tokens=6000)
    with pytest.raises(ConfigError, match="at least 64"):
        ContextPolicy(context_window=10)
    policy = ContextPolicy(context_window=8000)
    assert policy.budget == 7000
    assert policy.tier(4000) is None
    assert policy.tier(5000) == "trim"
    assert policy.tier(7000) == "summarize"
    assert policy.tier(7700) == "stage_summary"
    assert ContextPolicy(context_window=200_000).budget == 200_000 - 4096


def test_policy_for_a_profile() -> None:
    assert ContextPolicy.for_profile(ModelProfile(name="x")) is None
    profile = ModelProfile(name="x", context_window=32_000, max_output_tokens=2000)
    policy = ContextPolicy.for_profile(profile, trim_at=0.7, keep_last_turns=6)
    assert policy is not None
    assert policy.budget == 30_000
    assert (policy.trim_at, policy.keep_last_turns) == (0.7, 6)


def test_a_compaction_is_reported_as_a_json_event() -> None:
    compaction = Compaction(tier="trim", tokens_before=10, tokens_after=5, messages_removed=2)
    stored = json.loads(json.dumps(payload_to_dict(compaction.event(step=4))))
    assert (stored["step"], stored["messages_removed"]) == (4, 2)
    assert TokenCounter().count([]) > 0
