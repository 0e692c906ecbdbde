"""Token counting: estimates by kind of text, reported usage as the truth, calibration."""

from __future__ import annotations

import json
import random
import re
import string
from pathlib import Path
from typing import Any

import pytest

from harness.core.messages import Message, ToolCall, ToolDefinition
from harness.gateway import tokens
from harness.memory import TokenCounter, estimate_text

from .conftest import (
    CJK,
    CODE,
    JSON_TEXT,
    PROSE,
    SYSTEM,
    TASK,
    TOOLS,
    conversation,
    reference_tokens,
    turn,
)

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "providers"


def chars_per_token(text: str) -> float:
    return len(text) / estimate_text(text)


def test_density_follows_the_kind_of_text() -> None:
    prose, code, data, cjk = (chars_per_token(t * 20) for t in (PROSE, CODE, JSON_TEXT, CJK))
    assert 4.0 < prose < 6.0
    assert 2.2 < code < 3.6
    assert 1.8 < data < 3.2
    assert 0.8 < cjk < 1.2
    assert prose > code > cjk


def test_space_before_digits_costs_a_token() -> None:
    assert estimate_text("aisle 4, volume 12") == estimate_text("aisle,volume") + 2 + 2


def test_long_texts_are_sampled_in_proportion() -> None:
    mixed = PROSE + CODE + JSON_TEXT
    short = estimate_text(mixed * 50)
    long = estimate_text(mixed * 5000)
    assert long == pytest.approx(short * 100, rel=0.02)
    assert estimate_text("") == estimate_text(None) == 0


def test_without_reports_count_is_the_estimate() -> None:
    counter = TokenCounter()
    messages = conversation(3)
    assert counter.count(messages, TOOLS) == counter.estimate(messages, TOOLS)
    assert counter.estimate(messages, TOOLS) > counter.estimate(messages)


def test_reported_usage_is_the_truth_for_what_was_sent() -> None:
    counter = TokenCounter()
    sent = conversation(2)
    counter.observe(sent, TOOLS, 5000)
    assert counter.count(sent, TOOLS) == 5000
    new = turn(9)
    longer = [*sent, *new]
    assert counter.count(longer, TOOLS) == 5000 + sum(counter.message_tokens(m) for m in new)


def test_a_different_history_or_toolset_is_estimated_whole() -> None:
    counter = TokenCounter()
    sent = conversation(2)
    counter.observe(sent, TOOLS, 800)
    changed = [sent[0], Message.user("another task"), *sent[2:]]
    assert counter.count(changed, TOOLS) == counter.estimate(changed, TOOLS)
    assert counter.count(sent, ()) == counter.estimate(sent, ())
    # what the server adds that no message shows is learned as an offset
    assert counter.offset > 0
    assert counter.estimate(sent, TOOLS) == pytest.approx(800, abs=2)


def test_calibration_converges_toward_reported_usage() -> None:
    """A model whose tokenizer counts differently: each step the counter predicts the next
    request before it is sent, then learns what the provider reported for it."""
    counter = TokenCounter()
    messages = [SYSTEM, TASK]
    errors: list[float] = []
    kinds = ["prose", "code", "json", "prose"]
    for step in range(40):
        messages = [*messages, *turn(step, chars=300 + 37 * step % 500, kind=kinds[step % 4])]
        truth = reference_tokens(messages, TOOLS) * 13 // 10 + 150  # a denser tokenizer
        errors.append(abs(counter.count(messages, TOOLS) - truth) / truth)
        counter.observe(messages, TOOLS, truth)
    assert errors[0] > 0.2
    assert max(errors[-10:]) < 0.02
    fresh = conversation(5, kind="prose")
    truth = reference_tokens(fresh, TOOLS) * 13 // 10 + 150
    assert counter.estimate(fresh, TOOLS) == pytest.approx(truth, rel=0.12)
    assert counter.ratio == pytest.approx(1.3, rel=0.1)


def _numbers(counter: TokenCounter, messages: list[Message]) -> tuple[object, ...]:
    tool = Message.tool("call_9", "result " * 7, name="add")
    return (
        counter.ratio,
        counter.offset,
        counter.samples,
        counter.count(messages, TOOLS),
        counter.estimate(messages, TOOLS),
        counter.counted(tool).tokens,
        counter.text_tokens(PROSE),
    )


def test_an_observation_learned_when_first_needed_gives_the_numbers_of_one_learned_at_once() -> (
    None
):
    rnd = random.Random(3)
    eager, lazy = TokenCounter(), TokenCounter()
    messages = [SYSTEM, TASK]
    for step in range(60):
        action = rnd.choice(["extend", "extend", "trim", "edit", "unreported", "tools"])
        if action == "extend":
            messages = [*messages, *turn(step, chars=50 + 23 * step % 400)]
        elif action == "trim" and len(messages) > 4:  # a window that dropped old turns
            messages = [messages[0], *messages[4:]]
        elif action == "edit":  # a compaction: the same length, another message
            messages = [*messages[:-1], Message.user(f"summary {step}")]
        reported = 0 if action == "unreported" else reference_tokens(messages, TOOLS) * 11 // 10
        tools = () if action == "tools" else TOOLS
        for counter in (eager, lazy):
            counter.observe(messages, tools, reported)
        _numbers(eager, messages)  # reads every number: learns from each at once
        tool = Message.tool(f"call_{step}", "a result " * step, name="add")
        if rnd.random() < 0.5:  # a message's count needs the ratio only
            assert lazy.counted(tool).tokens == eager.counted(tool).tokens
        if rnd.random() < 0.2:  # reads now and then: learns from several in a row
            assert repr(_numbers(lazy, messages)) == repr(_numbers(eager, messages))
    assert repr(_numbers(lazy, messages)) == repr(_numbers(eager, messages))
    assert eager.samples > 10


def test_calibration_is_bounded_and_ignores_missing_reports() -> None:
    counter = TokenCounter(min_ratio=0.5, max_ratio=2.5)
    messages = [SYSTEM, TASK]
    for step in range(10):
        messages = [*messages, *turn(step)]
        counter.observe(messages, (), 1_000_000 * (step + 1))
    assert counter.ratio <= 2.5
    before = counter.ratio
    counter.observe([*messages, *turn(99)], (), 0)
    assert counter.ratio == before
    with pytest.raises(ValueError, match="min_ratio"):
        TokenCounter(ratio=3.0, max_ratio=2.0)


def test_estimate_counts_calls_reasoning_and_provider_data() -> None:
    bare = Message.assistant("ok")
    rich = Message(
        role="assistant",
        content="ok",
        reasoning="I should check the file first. " * 10,
        tool_calls=(ToolCall(id="c1", name="read", arguments=json.dumps({"path": "a" * 200})),),
        provider_data={"signature": "x" * 300},
    )
    counter = TokenCounter()
    assert counter.message_tokens(rich) > counter.message_tokens(bare) + 100


# --- recorded provider traffic ----------------------------------------------------------


def _messages(body: dict[str, Any]) -> tuple[list[Message], list[ToolDefinition]]:
    def text(content: Any) -> str | None:
        if content is None or isinstance(content, str):
            return content
        return "\n".join(str(part.get("text", "")) for part in content)

    messages = [
        Message(
            role=m["role"],
            content=text(m.get("content")),
            tool_calls=tuple(
                ToolCall(
                    id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"]
                )
                for c in m.get("tool_calls") or ()
            ),
            tool_call_id=m.get("tool_call_id"),
        )
        for m in body["messages"]
    ]
    tools = [
        ToolDefinition(
            name=t["function"]["name"],
            description=t["function"].get("description", ""),
            parameters=t["function"].get("parameters", {}),
        )
        for t in body.get("tools", ())
    ]
    return messages, tools


def _exchange(name: str) -> tuple[list[Message], list[ToolDefinition], int]:
    data = json.loads((CORPUS / f"{name}.json").read_text())
    messages, tools = _messages(data["request"]["body"])
    return messages, tools, data["response"]["body"]["usage"]["prompt_tokens"]


def test_estimate_of_recorded_openai_requests() -> None:
    """GPT-4-class tokenizers on recorded requests: the uncalibrated estimate is within
    about a half of the reported prompt tokens (server-side framing included)."""
    for name in (
        "openai-chat-cached-tokens",
        "openai-chat-single-tool-call",
        "openai-chat-tool-result-followup",
        "openai-chat-reasoning-tokens",
    ):
        messages, tools, reported = _exchange(name)
        assert 0.6 < TokenCounter().estimate(messages, tools) / reported < 1.6, name


@pytest.mark.parametrize(
    ("first", "follow_up"),
    [
        ("openai-chat-single-tool-call", "openai-chat-tool-result-followup"),
        ("llamacpp-chat-tool-call-with-reasoning", "llamacpp-chat-tool-result-leaked-think-tag"),
    ],
)
def test_a_follow_up_is_counted_from_the_first_reported_usage(first: str, follow_up: str) -> None:
    sent, tools, reported = _exchange(first)
    later, later_tools, truth = _exchange(follow_up)
    counter = TokenCounter()
    fresh_error = abs(counter.estimate(later, later_tools) - truth) / truth
    counter.observe(sent, tools, reported)
    error = abs(counter.count(later, later_tools) - truth) / truth
    assert error < 0.2
    assert error <= fresh_error


def test_counted_prefers_the_reported_count_and_keeps_an_existing_one() -> None:
    counter = TokenCounter(ratio=2.0, max_ratio=2.0)
    answer = Message.assistant(PROSE)
    reported = counter.counted(answer, reported=42)
    assert (reported.tokens, reported.tokens_source) == (42, "reported")
    estimated = counter.counted(answer)
    assert estimated.tokens == counter.message_tokens(answer)
    assert estimated.tokens_source == "estimated"
    assert counter.counted(reported, reported=7) is reported  # a count is never redone
    assert estimated.content == answer.content


@pytest.mark.parametrize("call_id", ["call_01JQ8Z3X4Y5W6V7T8S9R0Q1P2N", "c" * 20_000])
def test_a_tool_message_counts_its_call_id_without_remembering_it(call_id: str) -> None:
    # Ids are unique: kept in the cache of short texts, they would evict the prompts.
    from harness.gateway import tokens

    cache = tokens._estimate_cached  # pyright: ignore[reportPrivateUsage]
    tokens.estimate_message(Message.tool("call_0", "5", name="add"))
    before = cache.cache_info().currsize
    estimate = tokens.estimate_message(Message.tool(call_id, "5", name="add"))
    assert cache.cache_info().currsize == before
    expected = tokens.estimate_message(Message.tool("", "5", name="add")) + estimate_text(call_id)
    assert estimate == expected


def test_short_ascii_texts_counted_in_one_pass_cost_what_the_patterns_say() -> None:
    rnd = random.Random(7)
    alphabet = "aZ09 _-.!\t\n\x1c\x00\x7f~{}" + "abcdefghijklmnopqrstuvwxyz0123456789" + "  "
    alphabet += "\x0b\x0c\r\x1f@[`|/:"
    texts = [
        "",
        " ",
        "call_0ckq5v2h8r3d1m4n6p7s9t0u",
        string.printable,
        "".join(map(chr, range(128))),
    ]
    texts += ["".join(rnd.choice(alphabet) for _ in range(rnd.randrange(70))) for _ in range(5000)]
    for text in texts:
        assert repr(tokens._scan(text)) == repr(tokens._matched(text)), text


def test_whitespace_runs_are_the_two_or_more_and_the_lone_non_spaces() -> None:
    rnd = random.Random(8)
    alphabet = "a \t\n\u3000\xa0\u2028x  "
    for _ in range(5000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(40)))
        expected = re.findall(r"\s{2,}|[^\S ]", text)
        assert tokens._SPACES.findall(text) == expected, text
