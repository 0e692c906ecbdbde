"""Helpers for the memory tests: conversations, a validity check, a stand-in tokenizer."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

from harness.core.messages import Message, ToolCall, ToolDefinition
from harness.gateway.model import ModelRequest
from harness.gateway.scripted import FunctionModel

SYSTEM = Message.system("You are a careful agent. Use the tools; answer briefly.")
TASK = Message.user("Find out how many Python files the repository has, and list the largest.")
TOOLS = (
    ToolDefinition(
        name="bash",
        description="Run a shell command in the sandbox and return its output.",
        parameters={"type": "object", "properties": {"command": {"type": "string"}}},
    ),
)

PROSE = (
    "The build finished after the second attempt, once the cache directory had been "
    "cleared and the lock file regenerated. Nothing else in the tree changed. "
)
CODE = (
    "def load(path: str) -> dict[str, int]:\n"
    "    with open(path, encoding='utf-8') as f:\n"
    "        return {k: int(v) for k, v in json.load(f).items()}\n"
)
JSON_TEXT = json.dumps([{"id": i, "name": f"file_{i}.py", "lines": 120 + i} for i in range(8)])
CJK = "构建在第二次尝试后完成，缓存目录已清除，锁文件已重新生成。"
KINDS = {"prose": PROSE, "code": CODE, "json": JSON_TEXT, "cjk": CJK}


def text_of(kind: str, chars: int) -> str:
    base = KINDS[kind]
    return (base * (chars // len(base) + 1))[:chars]


def turn(i: int, *, calls: int = 1, chars: int = 400, kind: str = "prose") -> list[Message]:
    """One step: an assistant message calling tools, and a result for each call."""
    tool_calls = [
        ToolCall(id=f"call_{i}_{j}", name="bash", arguments=json.dumps({"command": f"ls {j}"}))
        for j in range(calls)
    ]
    results = [Message.tool(c.id, text_of(kind, chars), name="bash") for c in tool_calls]
    return [Message.assistant(f"Step {i}: looking further.", tool_calls), *results]


def conversation(turns: int, **kwargs: object) -> list[Message]:
    messages = [SYSTEM, TASK]
    for i in range(turns):
        messages += turn(i, **kwargs)  # type: ignore[arg-type]
    return messages


def assert_valid(messages: Sequence[Message]) -> None:
    """Every tool message answers a call of the assistant message before its run of tool
    messages, and every call of an assistant message is answered right after it."""
    assert messages, "empty request"
    open_calls: set[str] = set()
    for i, message in enumerate(messages):
        if message.role == "tool":
            assert message.tool_call_id in open_calls, f"message {i} answers no open call"
            open_calls.discard(message.tool_call_id)
            continue
        assert not open_calls, f"calls {sorted(open_calls)} unanswered before message {i}"
        if message.role == "assistant":
            open_calls = {c.id for c in message.tool_calls}
        else:
            open_calls = set()
    assert not open_calls, f"calls {sorted(open_calls)} unanswered at the end"


def summarizer(text: str = "The agent listed the files; 42 Python files so far.") -> FunctionModel:
    return FunctionModel(lambda request: text, name="summarizer")


def failing_summarizer() -> FunctionModel:
    def fail(request: ModelRequest) -> str:
        raise RuntimeError("summarizer is down")

    return FunctionModel(fail, name="broken")


_PRETOKENS = re.compile(r"'(?:s|t|re|ve|m|ll|d)| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+(?!\S)|\s+|_+")


def reference_tokens(messages: Sequence[Message], tools: Sequence[ToolDefinition] = ()) -> int:
    """A stand-in tokenizer, independent of the estimator under test: byte-pair
    pre-tokens (in the style of GPT-2's pattern), long ones split every 7 characters,
    CJK one token a character, plus 5 tokens of framing per message and 20 per tool."""

    def text(t: str | None) -> int:
        if not t:
            return 0
        total = 0
        for piece in _PRETOKENS.findall(t):
            cjk = sum(1 for c in piece if "\u4e00" <= c <= "\u9fff" or "\u3000" <= c <= "\u30ff")
            total += (
                cjk + math.ceil(max(0, len(piece.strip()) - cjk) / 7)
                if cjk
                else max(1, math.ceil(len(piece.strip()) / 7))
            )
        return total

    total = 3 + sum(20 + text(json.dumps(t.parameters)) + text(t.description) for t in tools)
    for m in messages:
        total += 5 + text(m.content) + text(m.tool_call_id)
        total += sum(8 + text(c.name) + text(c.arguments) for c in m.tool_calls)
    return total
