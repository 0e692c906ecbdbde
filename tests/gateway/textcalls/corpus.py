"""The raw tool-call corpus (tests/corpus/raw_tool_calls) and how a case is checked.

Comparison rules from the corpus README, §2: content and reasoning are compared after
trimming surrounding whitespace (a missing value counts as empty), arguments as parsed
JSON, ids only where the case gives one. Where a case leaves the handling open
(`error`, malformed output with no call), the choice made here is listed in `MALFORMED`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.core.messages import ToolDefinition
from harness.gateway.model import ReasoningDelta, TextDelta
from harness.gateway.textcalls import PartialCall, TextCallStream, TextParse, parse_text

RAW = Path(__file__).resolve().parents[2] / "corpus" / "raw_tool_calls"

Case = dict[str, Any]

MALFORMED: dict[str, int] = {
    # The reply tried to call and failed: the model is told (one MalformedCall each).
    "hermes-invalid-json-missing-brace": 1,  # cut off inside the JSON, no closing tag
    "llama3-json-invalid-json": 1,  # starts as a call object, is not JSON
    "mistral-pre-v11-two-markers-rejected": 1,  # two arrays: nothing runs, the model is told
    "mistral-v11-name-without-arguments": 1,  # a name with no arguments
    "pythonic-unrecoverable-block": 1,  # a list of calls that is not Python
    "pythonic-bad-sibling-dropped": 1,  # bytes literal: that call only
    "pythonic-non-finite-number-rejected": 1,  # 1e999: that call only
    "harmony-llamacpp-unsolicited-builtin-tool": 1,  # container.exec was never offered
}
"""Cases whose reply holds call markup that cannot run, with the number reported."""

FAMILIES: dict[str, str] = {
    "hermes": "Qwen2.5-7B-Instruct",
    "qwen3_coder": "Qwen3-Coder-30B-A3B-Instruct",
    "llama3_json": "Meta-Llama-3.1-8B-Instruct",
    "pythonic": "Llama-4-Scout-17B-16E-Instruct",
    "pythonic_lfm2": "LFM2-1.2B",
    "mistral": "Mistral-Nemo-Instruct-2407",
    "mistral_v11": "Devstral-Small-2505",
    "mistral_v13": "Mistral-Small-3.2-24B-Instruct-2506",
    "harmony": "gpt-oss-20b",
    "deepseek_v3": "DeepSeek-V3.1",
    "deepseek_r1": "DeepSeek-R1-0528",
    "kimi_k2": "Kimi-K2-Instruct",
    "functionary_v3.1": "functionary-medium-v3.1",
    "command_r7b": "c4ai-command-r7b-12-2024",
}
"""A model name of each format's family, for `auto`."""


def load_cases() -> list[Case]:
    """Every case, sorted by file name, with its `id`."""
    return [
        json.loads(path.read_text(encoding="utf-8")) | {"id": path.stem}
        for path in sorted(RAW.glob("*.json"))
    ]


def params(cases: Sequence[Case]) -> list[Any]:
    """`pytest.param`s with the file stem as id."""
    return [pytest.param(case, id=case["id"]) for case in cases]


def tools(case: Case) -> tuple[ToolDefinition, ...]:
    """The case's tools as definitions."""
    return tuple(
        ToolDefinition(
            name=t["name"], description=t.get("description", ""), parameters=t["parameters"]
        )
        for t in case.get("context", {}).get("tools", [])
    )


def options(case: Case) -> dict[str, Any]:
    """Keyword arguments for `parse_text` and `TextCallStream`."""
    context = case.get("context", {})
    return {
        "tools": tools(case),
        "thinking_forced_open": bool(context.get("thinking_forced_open", False)),
    }


def is_snapshot(case: Case) -> bool:
    """Whether the case is a mid-stream snapshot rather than a whole reply."""
    return case["expected_behaviour"] == "partial"


def parse(case: Case, *, format: str | None = None, **extra: Any) -> TextParse:
    """The case's text parsed whole (as a snapshot for `partial` cases)."""
    return parse_text(
        case["text"], format or case["format"], partial=is_snapshot(case), **options(case), **extra
    )


def stream(
    case: Case, pieces: Sequence[str], *, format: str | None = None
) -> tuple[TextParse, str, str]:
    """The case's text fed in `pieces`: the parse, and the answer and reasoning deltas.

    A `partial` case ends with a snapshot instead of the end of the reply.
    """
    reader = TextCallStream(format or case["format"], **options(case))
    deltas = [delta for piece in pieces for delta in reader.feed(piece)]
    if is_snapshot(case):
        parsed = reader.snapshot()
    else:
        rest, parsed = reader.finish()
        deltas += rest
    text = "".join(d.text for d in deltas if isinstance(d, TextDelta))
    reasoning = "".join(d.text for d in deltas if isinstance(d, ReasoningDelta))
    return parsed, text, reasoning


def cut(text: str, points: Sequence[int]) -> list[str]:
    """`text` cut at `points` (any order, repeats allowed)."""
    bounds = [0, *sorted(set(points)), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def summary(parsed: TextParse) -> tuple[Any, ...]:
    """Everything a parse says, with generated ids left out."""
    return (
        parsed.partial,
        parsed.content,
        parsed.reasoning,
        tuple((c.name, c.arguments) for c in parsed.calls),
        parsed.malformed,
        parsed.format,
    )


def _norm(value: str | None) -> str:
    return (value or "").strip()


def assert_case(parsed: TextParse, case: Case) -> None:
    """The parse meets the case's expectations (README §2) and our malformed choices."""
    expected = case["expected"]
    if is_snapshot(case):
        # The call being written is reported as partial: name and arguments so far.
        *expected, writing = expected
        assert parsed.partial == PartialCall(
            name=writing["name"], arguments=writing["arguments_partial"]
        )
    else:
        assert parsed.partial is None
    assert [c.name for c in parsed.calls] == [e["name"] for e in expected]
    for got, want in zip(parsed.calls, expected, strict=True):
        if "arguments_raw" in want:
            # Passed through as written (here with the closing quote the model did write),
            # so the tool answers with the JSON error.
            assert got.arguments.startswith(want["arguments_raw"])
            with pytest.raises(ValueError):  # noqa: PT011 - json's own error type
                json.loads(got.arguments)
        else:
            assert json.loads(got.arguments) == want["arguments"]
        if "id" in want:
            assert got.id == want["id"]
    assert len({c.id for c in parsed.calls}) == len(parsed.calls)
    if "expected_content" in case:
        assert _norm(parsed.content) == _norm(case["expected_content"])
    if "expected_reasoning" in case:
        assert _norm(parsed.reasoning) == _norm(case["expected_reasoning"])
    assert len(parsed.malformed) == MALFORMED.get(case["id"], 0)
    assert all(m.problem for m in parsed.malformed)
    assert all(m.text for m in parsed.malformed)
    if case["expected_behaviour"] in ("no_tool_call", "error"):
        assert parsed.calls == ()
    if case["expected_behaviour"] == "error":
        assert parsed.malformed
