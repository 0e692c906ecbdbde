"""Properties that hold for any conversation: every request fits and is a valid sequence."""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.core.messages import Message, ToolCall
from harness.core.usage import Usage
from harness.gateway.model import Model, ModelRequest, ModelResponse
from harness.gateway.scripted import FunctionModel
from harness.memory import ContextPolicy, WindowManager

from .conftest import (
    SYSTEM,
    TASK,
    TOOLS,
    assert_valid,
    failing_summarizer,
    reference_tokens,
    summarizer,
    text_of,
)

CUT_NOTE = "characters cut here to fit the context window"
SIZES = st.one_of(st.integers(0, 1500), st.sampled_from([5000, 40_000]))
KIND = st.sampled_from(["prose", "code", "json", "cjk"])


@st.composite
def steps(draw: st.DrawFn, index: int) -> list[Message]:
    """One step of a run: tool calls with their results, a nudge, or assistant text."""
    kind = draw(st.sampled_from(["calls", "calls", "calls", "nudge", "text"]))
    if kind == "nudge":
        return [Message.user(text_of(draw(KIND), draw(SIZES)) or "go on")]
    if kind == "text":
        return [Message.assistant(text_of(draw(KIND), draw(SIZES)) or "thinking")]
    calls = [
        ToolCall(id=f"c{index}_{j}", name="bash", arguments=json.dumps({"command": f"ls {j}"}))
        for j in range(draw(st.integers(1, 3)))
    ]
    content = draw(st.one_of(st.none(), st.just("Looking.")))
    results = [Message.tool(c.id, text_of(draw(KIND), draw(SIZES))) for c in calls]
    return [Message.assistant(content, calls), *results]


@st.composite
def runs(draw: st.DrawFn) -> list[list[Message]]:
    return [draw(steps(i)) for i in range(draw(st.integers(1, 30)))]


@st.composite
def policies(draw: st.DrawFn) -> ContextPolicy:
    trim_to, trim_at, summarize_at, stage_at = sorted(
        draw(st.lists(st.floats(0.2, 1.0), min_size=4, max_size=4))
    )
    return ContextPolicy(
        context_window=draw(st.integers(1500, 8000)),
        trim_to=trim_to,
        trim_at=trim_at,
        summarize_at=summarize_at,
        stage_at=stage_at,
        keep_last_turns=draw(st.integers(1, 6)),
        max_message_share=draw(st.floats(0.2, 1.0)),
    )


def long_summarizer() -> FunctionModel:
    return FunctionModel(lambda request: text_of("prose", 50_000), name="verbose")


SUMMARIZERS = {
    "ok": summarizer,
    "fails": failing_summarizer,
    "verbose": long_summarizer,
    "none": lambda: None,
}


def check(history: list[Message], sent: tuple[Message, ...], window: WindowManager) -> None:
    assert_valid(sent)
    assert window.counter.count(sent, TOOLS) <= window.policy.budget
    assert [m.role for m in sent[:2]] == ["system", "user"]
    for original, kept in zip(history[:2], sent[:2], strict=True):
        assert kept == original or CUT_NOTE in (kept.content or "")
    if window.state.stage and window.state.history_index == len(history):
        assert "Stage summary" in (sent[-1].content or "")  # continues from the stage summary
        return
    last, kept_last = history[-1], sent[-1]
    assert (kept_last.role, kept_last.tool_call_id) == (last.role, last.tool_call_id)
    assert kept_last == last or CUT_NOTE in (kept_last.content or "") + (
        kept_last.tool_calls[0].arguments if kept_last.tool_calls else ""
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=runs(), policy=policies(), which=st.sampled_from(sorted(SUMMARIZERS)))
def test_any_run_sends_only_valid_requests_within_the_budget(
    run: list[list[Message]], policy: ContextPolicy, which: str
) -> None:
    window = WindowManager(policy)
    model: Model | None = SUMMARIZERS[which]()

    async def go() -> None:
        history = [SYSTEM, TASK]
        for step in run:
            history += step
            snapshot = list(history)
            prepared = await window.prepare(history, TOOLS, summarizer=model)
            assert history == snapshot  # the full history is never changed
            check(history, prepared.messages, window)
            reported = reference_tokens(prepared.messages, TOOLS)
            window.observe(prepared.messages, TOOLS, Usage(input_tokens=reported))

    asyncio.run(go())


async def test_a_500_step_run_with_a_small_window() -> None:
    """Every request a 500-step run sends fits the window by the provider's own count, and
    every tool message follows the assistant message that called it."""
    window_size = 3000
    rng = random.Random(500)
    window = WindowManager(ContextPolicy(context_window=window_size, keep_last_turns=3))
    sizes: list[int] = []

    def act(request: ModelRequest) -> ModelResponse:
        tokens = reference_tokens(request.messages, request.tools)
        sizes.append(tokens)
        assert tokens <= window_size
        assert_valid(request.messages)
        calls = [
            ToolCall(id=f"c{len(sizes)}_{j}", name="bash", arguments='{"command": "ls"}')
            for j in range(rng.choice([1, 1, 2, 3]))
        ]
        return ModelResponse(
            message=Message.assistant(f"Step {len(sizes)}.", calls),
            finish_reason="tool_calls",
            usage=Usage(input_tokens=tokens, requests=1),
        )

    def summarize(request: ModelRequest) -> str:
        assert reference_tokens(request.messages) + window.policy.summary_tokens <= window_size
        return f"Summary after {len(sizes)} steps: " + text_of("prose", rng.randint(100, 3000))

    model, writer = FunctionModel(act), FunctionModel(summarize)
    history = [SYSTEM, TASK]
    tiers: Counter[str] = Counter()
    for _ in range(500):
        prepared = await window.prepare(history, TOOLS, summarizer=writer)
        if prepared.compaction:
            tiers[prepared.compaction.tier] += 1
        request = ModelRequest(messages=prepared.messages, tools=TOOLS)
        response = await model.request(request)
        window.observe(request.messages, TOOLS, response.usage)
        history.append(response.message)
        for call in response.message.tool_calls:
            chars = rng.choice([50, 300, 800, 1500, 3000, 60_000])
            history.append(
                Message.tool(call.id, text_of(rng.choice(["prose", "code", "json", "cjk"]), chars))
            )
    assert len(sizes) == 500
    assert tiers["trim"] > 0
    assert tiers["summarize"] + tiers["stage_summary"] > 0
    assert max(sizes) > 0.5 * window_size
