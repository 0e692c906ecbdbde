"""The context window manager in the agent loop: what is sent fits; the history stays whole."""

import json
import math
import random
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from harness.agent import AgentLoop, AgentSpec
from harness.core import Limits, Message, RunEvent, RunResult, ToolCall, Usage
from harness.core.events import ContextCompacted, payloads
from harness.errors import ConfigError
from harness.gateway import Model, ModelProfile, ModelRequest, ModelResponse
from harness.gateway.profiled import ProfiledModel
from harness.gateway.profiles import ContextThresholds
from harness.memory import ContextPolicy, ContextState
from harness.runtime.bus import EventBus, RunRecorder
from harness.testing import FunctionModel, ScriptedModel, call, reply
from harness.tools import Toolset, tool

PROSE = (
    "The build finished after the second attempt, once the cache directory had been "
    "cleared and the lock file regenerated. Nothing else in the tree changed. "
)
JSON_TEXT = json.dumps([{"id": i, "name": f"file_{i}.py", "lines": 120 + i} for i in range(8)])
SUMMARY_PROMPTS = ("You compress the history", "An AI agent's context window")


def text_of(kind: str, chars: int) -> str:
    base = PROSE if kind == "prose" else JSON_TEXT
    return (base * (chars // len(base) + 1))[:chars]


@tool(side_effects="none")
def inspect(size: int, kind: str = "prose") -> str:
    """Return `size` characters of output."""
    return text_of(kind, size)


_WORDS = re.compile(r"\w+|[^\w\s]")


def provider_tokens(messages: Sequence[Message], tools: Sequence[Any] = ()) -> int:
    """The fake provider's own count, independent of harness's estimator: a token per word
    piece of up to 6 characters and per punctuation mark, 6 per message, 25 per tool."""

    def text(t: str | None) -> int:
        return sum(math.ceil(len(w) / 6) for w in _WORDS.findall(t or ""))

    total = 25 * len(tools)
    for m in messages:
        total += 6 + text(m.content) + text(m.tool_call_id)
        total += sum(8 + text(c.name) + text(c.arguments) for c in m.tool_calls)
    return total


def valid_sequence(messages: Sequence[Message]) -> bool:
    """Every tool message answers a call of the assistant message just before its run of
    tool messages, and every call is answered before anything else comes."""
    open_calls: set[str] = set()
    for message in messages:
        if message.role == "tool":
            if message.tool_call_id not in open_calls:
                return False
            open_calls.discard(message.tool_call_id)
            continue
        if open_calls:
            return False
        open_calls = {c.id for c in message.tool_calls} if message.role == "assistant" else set()
    return not open_calls


async def run(
    model: Model, spec: AgentSpec, *, tools: Sequence[object] = (inspect,)
) -> tuple[list[RunEvent], RunResult]:
    recorder = RunRecorder("run_c", EventBus())
    loop = AgentLoop(spec, model=model, toolset=Toolset(list(tools)), sink=recorder)  # type: ignore[arg-type]
    messages = [Message.system("You inspect a repository."), Message.user("Inspect everything.")]
    return recorder.events, await loop.run("run_c", messages)


async def test_a_500_step_run_with_a_small_window_never_sends_too_much_or_a_broken_sequence() -> (
    None
):
    window = 3000
    rng = random.Random(500)
    sent: list[tuple[str, int, bool]] = []  # (kind, provider tokens, valid sequence)

    def act(request: ModelRequest) -> ModelResponse:
        tokens = provider_tokens(request.messages, request.tools)
        system = request.messages[0].content or ""
        if system.startswith(SUMMARY_PROMPTS):
            sent.append(("summary", tokens, valid_sequence(request.messages)))
            summary = f"Summary after {len(sent)} requests: " + text_of(
                "prose", rng.randint(80, 2500)
            )
            return ModelResponse(
                message=Message.assistant(summary),
                finish_reason="stop",
                usage=Usage(input_tokens=tokens, output_tokens=300, requests=1),
            )
        sent.append(("agent", tokens, valid_sequence(request.messages)))
        calls = [
            ToolCall(
                id=f"c{len(sent)}_{j}",
                name="inspect",
                arguments=json.dumps(
                    {
                        "size": rng.choice([40, 300, 800, 1500, 3000, 60_000]),
                        "kind": rng.choice(["prose", "json"]),
                    }
                ),
            )
            for j in range(rng.choice([1, 1, 2, 3]))
        ]
        message = Message.assistant(f"Step {len(sent)}: looking further.", calls)
        if not request.tools:  # the wrap-up turn
            message = Message.assistant("Inspected everything I could.")
        return ModelResponse(
            message=message,
            finish_reason="tool_calls" if message.tool_calls else "stop",
            usage=Usage(input_tokens=tokens, output_tokens=20, requests=1),
        )

    profile = ModelProfile(
        name="small", context_window=window, context=ContextThresholds(keep_last_turns=3)
    )
    model = ProfiledModel(FunctionModel(act), profile)
    spec = AgentSpec(name="long", model=model, limits=Limits(max_steps=500))
    events, result = await run(model, spec)

    assert result.termination == "max_steps", result.error
    agent_requests = [s for s in sent if s[0] == "agent"]
    assert len(agent_requests) == 501  # 500 steps and the wrap-up
    oversized = [(i, tokens) for i, (_, tokens, _) in enumerate(sent) if tokens > window]
    assert oversized == []
    broken = [i for i, (_, _, valid) in enumerate(sent) if not valid]
    assert broken == []
    assert max(tokens for _, tokens, _ in agent_requests) > window // 2  # the window was used

    # the full history is all there, and valid
    history = result.messages
    assert sum(1 for m in history if m.role == "assistant") == 501
    assert valid_sequence(history)

    compactions = payloads(events, ContextCompacted)
    tiers = Counter(c.tier for c in compactions)
    assert tiers["trim"] > 0
    assert tiers["summarize"] + tiers["stage_summary"] > 0
    assert all(c.tokens_after <= window for c in compactions)
    # every summary request is counted in the run's usage
    assert result.usage.requests == len(sent)


async def test_without_a_known_window_everything_is_sent() -> None:
    model = ScriptedModel([reply(None, call("inspect", {"size": 50_000})), reply("done")])
    events, result = await run(model, AgentSpec(model=model))
    assert result.ok
    assert model.requests[1].messages == result.messages[:4]
    assert not any(e.type == "context_compacted" for e in events)


def long_run_model(steps: int = 12) -> FunctionModel:
    """Inspects `steps` times (3000 characters each), then answers `done`."""
    taken: list[int] = []

    def act(request: ModelRequest) -> Message:
        system = request.messages[0].content or ""
        if system.startswith(SUMMARY_PROMPTS):
            return reply("The agent inspected several files; all were prose.")
        taken.append(1)
        if len(taken) > steps or not request.tools:
            return reply("done")
        return reply(None, call("inspect", {"size": 3000}))

    return FunctionModel(act)


async def test_the_agents_context_settings_apply_over_the_profiles() -> None:
    profile = ModelProfile(name="p", context_window=4000, context=ContextThresholds(trim_at=0.55))
    model = ProfiledModel(long_run_model(), profile)
    spec = AgentSpec(model=model, context={"summarize_at": 0.6, "stage_at": 0.99})
    assert spec.context_policy(model) == ContextPolicy(
        context_window=4000, trim_at=0.55, summarize_at=0.6, stage_at=0.99
    )
    wider = AgentSpec(model=model, context={"context_window": 6000, "keep_last_turns": 2})
    assert wider.context_policy(model) == ContextPolicy(
        context_window=6000, trim_at=0.55, keep_last_turns=2
    )
    assert AgentSpec(model=model).context_policy(long_run_model()) is None
    events, result = await run(model, spec)
    assert result.ok
    tiers = {e.payload.tier for e in events if e.type == "context_compacted"}
    assert "summarize" in tiers
    summary = next(c for c in payloads(events, ContextCompacted) if c.summary)
    assert "summary" not in (summary.state or {})  # the event carries it once
    assert ContextState.from_event(summary).summary == summary.summary


async def test_a_context_policy_on_the_agent_works_for_any_model() -> None:
    model = long_run_model()
    spec = AgentSpec(model=model, context=ContextPolicy(context_window=2500))
    events, result = await run(model, spec)
    assert result.ok
    assert any(e.type == "context_compacted" for e in events)
    agent_requests = [
        r for r in model.requests if not (r.messages[0].content or "").startswith(SUMMARY_PROMPTS)
    ]
    assert len(agent_requests[-1].messages) < len(result.messages) - 1


async def test_a_resumed_run_starts_from_the_last_compaction_state() -> None:
    model = long_run_model()
    policy = ContextPolicy(context_window=2500, trim_at=0.6, summarize_at=0.6, keep_last_turns=1)
    spec = AgentSpec(model=model, context=policy)
    events, first = await run(model, spec)
    last = payloads(events, ContextCompacted)[-1]
    state = ContextState.from_event(last)
    assert state.summary

    again = ScriptedModel(["done again"])
    recorder = RunRecorder("run_c", EventBus())
    loop = AgentLoop(spec, model=again, toolset=Toolset([inspect]), sink=recorder)  # type: ignore[arg-type]
    history = [*first.messages, Message.user("One more thing: say it again.")]
    result = await loop.run("run_c", history, context=state)
    assert result.output == "done again"
    (request,) = again.requests  # no summary had to be written again
    assert state.summary in (request.messages[2].content or "")


def test_bad_context_settings_fail_when_the_agent_is_made() -> None:
    with pytest.raises(ConfigError, match="unknown context setting"):
        AgentSpec(context={"trim": 0.5})
    with pytest.raises(ConfigError, match="trim_at <= summarize_at"):
        AgentSpec(context={"context_window": 1000, "trim_at": 0.9, "summarize_at": 0.5})


async def test_thresholds_out_of_order_with_the_defaults_fail_the_run_clearly() -> None:
    profile = ModelProfile(name="p", context_window=4000, context=ContextThresholds(trim_at=0.9))
    model = ProfiledModel(ScriptedModel(["done"]), profile)
    _, result = await run(model, AgentSpec(model=model))
    assert result.termination == "error"
    assert "model profile 'p'" in (result.error or "")
