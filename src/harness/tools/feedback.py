"""What the model is told when a tool call fails or finds nothing, and what to try next.

A model that is told only "not found" tries the same call again with small changes; one
that is told what exists and what to try instead moves on. Every text here names what went
wrong in terms of the call the model made and ends with the next step; none contains a
traceback.

Tool authors use the first group to do the same in their own tools::

    from harness.tools.feedback import empty_result, not_found

    if order_id not in orders:
        raise not_found("order", order_id, orders, try_instead="recent_orders lists them.")
    if not placed:
        return empty_result(
            f"No orders were placed in the last {days} days",
            try_instead="Ask for a longer period, e.g. days=30.",
        )

The second group is what the toolset itself says about calls it cannot run (unknown tool,
arguments that are not JSON or break the schema, a crash, a timeout).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, cast

from harness.errors import ToolError
from harness.tools.spec import ToolSpec
from harness.tools.validation import Violation

__all__ = [
    "close_matches",
    "did_you_mean",
    "empty_result",
    "invalid_arguments",
    "invalid_json",
    "more_available",
    "not_an_object",
    "not_found",
    "parameters_summary",
    "tool_crash",
    "tool_error",
    "tool_timeout",
    "unknown_tool",
]

MAX_VIOLATIONS: Final = 8
"""Violations listed; more would bury the first ones."""

_EXCERPT: Final = 40
"""Characters shown on each side of the place where JSON decoding failed."""

_NAME_CHARS: Final = 80
_DETAIL_CHARS: Final = 500
_MAX_LISTED: Final = 30
_MAX_CANDIDATES: Final = 10_000
"""Names compared for suggestions; past this, a suggestion is not worth the time."""


# --- for tool authors ---------------------------------------------------------------------


def close_matches(
    word: str, candidates: Iterable[str], *, n: int = 3, cutoff: float = 0.6
) -> list[str]:
    """The candidates most similar to `word`, best first (difflib's ratio).

    Args:
        word: What the model asked for, e.g. a misspelt file or column name.
        candidates: What exists; only the first 10,000 are compared.
        n: The most matches returned.
        cutoff: Similarity between 0 and 1 below which a candidate is not a match.

    Returns:
        Up to `n` candidates; empty when nothing is close.
    """
    pool = [c for _, c in zip(range(_MAX_CANDIDATES), candidates, strict=False) if c != word]
    matcher = difflib.SequenceMatcher(b=word[:_NAME_CHARS])
    scored: list[tuple[float, int, str]] = []
    for index, candidate in enumerate(pool):
        matcher.set_seq1(candidate)
        if candidate.casefold() == word.casefold():
            scored.append((-2.0, index, candidate))  # another case of the same name: first
        elif matcher.real_quick_ratio() >= cutoff and matcher.quick_ratio() >= cutoff:
            if (score := matcher.ratio()) >= cutoff:
                scored.append((-score, index, candidate))  # ties keep the candidates' order
    return [candidate for _, _, candidate in sorted(scored)[:n]]


def did_you_mean(
    word: str,
    candidates: Iterable[str],
    *,
    n: int = 3,
    show: Callable[[str], str] | None = None,
) -> str:
    """A sentence suggesting the candidates closest to `word`, or `""` when none is close.

    Args:
        word: What the model asked for.
        candidates: What exists.
        n: The most candidates suggested.
        show: How to write a candidate in the sentence, e.g. a file name as a path from the
            workspace root; the candidate itself by default.

    Returns:
        For example `"Did you mean 'main.py' or 'main.pyi'?"`.
    """
    close = close_matches(word, candidates, n=n)
    if not close:
        return ""
    quoted = [repr(show(c) if show else c) for c in close]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f"Did you mean {listed}?"


def not_found(
    what: str, name: str, candidates: Iterable[str] = (), *, try_instead: str
) -> ToolError:
    """The error to raise when the model names something that does not exist.

    Args:
        what: The kind of thing, e.g. `"file"`, `"order"` or `"column"`.
        name: The name the model gave.
        candidates: Names that do exist; the closest are suggested.
        try_instead: How to find what exists, e.g. `"Use list_dir on 'src'."`.

    Returns:
        A `ToolError` whose hint suggests close names, then `try_instead`.
    """
    guess = did_you_mean(name, candidates)
    hint = f"{guess} {_sentence(try_instead)}" if guess else _sentence(try_instead)
    return ToolError(f"There is no {what} {_quote(name)}.", hint=hint)


def empty_result(what: str, *, try_instead: str) -> str:
    """The text to return when a tool worked but found nothing: what, and what to try next.

    An empty list or a bare "not found" makes a model retry the same call; naming what
    was looked for and a broader or different query makes it change course (seed §5.1).

    Args:
        what: What was searched and found empty, e.g. `"No orders in the last 7 days"`.
        try_instead: The next step, e.g. `"Ask for a longer period, e.g. days=30."`.

    Returns:
        The two as sentences, e.g. `"No orders in the last 7 days. Ask for a longer ..."`.
    """
    return f"{_sentence(what)} {_sentence(try_instead)}"


def _sentence(text: str) -> str:
    """`text` ending with a full stop; its first word is left alone (it may be a name)."""
    text = text.strip()
    return text if not text or text[-1] in ".!?:)]\"'`" else text + "."


# --- what the toolset says ----------------------------------------------------------------


def unknown_tool(name: str, available: Sequence[str]) -> str:
    """The model called a tool that does not exist."""
    if not available:
        return (
            f"Unknown tool {_quote(name)}. No tools are available here; "
            "answer without calling a tool."
        )
    listed = ", ".join(available[:_MAX_LISTED]) + (", ..." if len(available) > _MAX_LISTED else "")
    close = close_matches(name, available, n=1)
    guess = f" Did you mean {close[0]!r}?" if close else ""
    return (
        f"Unknown tool {_quote(name)}.{guess} Available tools: {listed}. "
        "Call one of these by its exact name."
    )


def invalid_json(spec: ToolSpec, arguments: str, error: ValueError | RecursionError) -> str:
    """The arguments were not valid JSON."""
    if isinstance(error, json.JSONDecodeError):
        where = (
            f"{error.msg} at line {error.lineno}, column {error.colno} "
            f"(character {error.pos}), here: {_excerpt(arguments, error.pos)}"
        )
    elif isinstance(error, RecursionError):
        where = "it is nested too deeply"
    else:
        where = _shorten(str(error) or type(error).__name__, _DETAIL_CHARS)
    return (
        f"The arguments for tool {spec.name!r} were not valid JSON: {where}.\n"
        "Resend the call with the arguments as a single JSON object (double-quoted keys "
        "and strings, no comments or trailing commas) that matches the parameters.\n"
        f"{parameters_summary(spec)}"
    )


def not_an_object(spec: ToolSpec, value: object) -> str:
    """The arguments were valid JSON, but not a JSON object."""
    return (
        f"The arguments for tool {spec.name!r} must be a JSON object with named "
        f"parameters, but {_json_kind(value)} was sent.\n"
        "Resend the call with one JSON object that matches the parameters.\n"
        f"{parameters_summary(spec)}"
    )


def invalid_arguments(
    spec: ToolSpec, violations: Sequence[Violation], hint: str | None = None
) -> str:
    """The arguments broke the tool's schema (or its conversion to Python values)."""
    lines = [f"- {violation}" for violation in violations[:MAX_VIOLATIONS]]
    if len(violations) > MAX_VIOLATIONS:
        lines.append(f"- ... and {len(violations) - MAX_VIOLATIONS} more")
    advice = hint or f"Fix these and call {spec.name!r} again."
    return (
        f"The arguments for tool {spec.name!r} do not match its parameters:\n"
        + "\n".join(lines)
        + f"\n{parameters_summary(spec)}\n{advice}"
    )


def tool_error(spec: ToolSpec, error: ToolError) -> str:
    """The tool refused the call with a `ToolError`."""
    text = f"Tool {spec.name!r} failed: {error.message}"
    return f"{text}\nHint: {error.hint}" if error.hint else text


def tool_crash(spec: ToolSpec, error: BaseException) -> str:
    """The tool raised an unexpected exception."""
    detail = _shorten(f"{type(error).__name__}: {_safe_str(error)}".rstrip(": "), _DETAIL_CHARS)
    return (
        f"Tool {spec.name!r} crashed: {detail}\n"
        "This is an error inside the tool. Do not repeat the same call: check the "
        "arguments, try different ones, or reach the goal another way."
    )


def tool_timeout(spec: ToolSpec, seconds: float) -> str:
    """The tool ran past its timeout and was stopped."""
    return (
        f"Tool {spec.name!r} was stopped after {seconds:g} s because it took too long "
        "(timeout). Try a smaller or faster step: less input, a narrower query, or "
        "the work split over several calls."
    )


def parameters_summary(spec: ToolSpec) -> str:
    """One line naming the parameters of `spec`, their types, and which are required."""
    properties: object = spec.parameters.get("properties")
    if not isinstance(properties, dict) or not properties:
        return f"Tool {spec.name!r} takes no parameters: send {{}}."
    required = set(spec.required)
    named = cast(dict[str, object], properties)
    parts = [_describe(name, schema, name in required) for name, schema in named.items()]
    return f"Parameters of {spec.name!r}: " + _join(parts) + "."


def _describe(name: str, schema: object, required: bool) -> str:
    return f"{name} ({_type_label(schema)}, {'required' if required else 'optional'})"


def _type_label(schema: object, depth: int = 0) -> str:
    if not isinstance(schema, dict) or depth > 2:
        return "any"
    node = cast(dict[str, Any], schema)
    if isinstance(node.get("enum"), list):
        return "one of " + _join(json.dumps(v, ensure_ascii=False) for v in node["enum"])
    if "const" in node:
        return json.dumps(node["const"], ensure_ascii=False)
    for key in ("anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            return " or ".join(_type_label(option, depth + 1) for option in node[key])
    kind = node.get("type")
    if kind == "array" and isinstance(node.get("items"), dict):
        return f"array of {_type_label(node['items'], depth + 1)}"
    if isinstance(kind, list):
        return " or ".join(str(k) for k in cast(list[object], kind))
    return kind if isinstance(kind, str) else "any"


def _join(parts: Iterable[str]) -> str:
    listed = list(parts)
    if len(listed) > _MAX_LISTED:
        listed = [*listed[:_MAX_LISTED], "..."]
    return ", ".join(listed)


def _json_kind(value: object) -> str:
    kinds = (
        (bool, "a boolean"),
        (int | float, "a number"),
        (str, "a string"),
        (list, "an array"),
        (type(None), "null"),
    )
    kind = next((text for cls, text in kinds if isinstance(value, cls)), "another value")
    if isinstance(value, str) and value.lstrip().startswith("{"):
        return "a string holding JSON (the object was encoded twice)"
    return kind


def _excerpt(text: str, position: int) -> str:
    before = text[max(0, position - _EXCERPT) : position]
    after = text[position : position + _EXCERPT]
    start = "…" if position > _EXCERPT else ""
    end = "…" if position + _EXCERPT < len(text) else ""
    return f"`{start}{_visible(before)}⟦HERE⟧{_visible(after)}{end}`"


def _visible(text: str) -> str:
    """Escape control characters, so that the excerpt stays on one line."""
    return "".join(ch if ch.isprintable() else json.dumps(ch)[1:-1] for ch in text)


def _safe_str(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # an exception whose __str__ fails must not fail the run
        return "(the error could not be shown)"


def _quote(name: str) -> str:
    return repr(_shorten(_visible(name), _NAME_CHARS))


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def more_available(call_id: str, total: int) -> str:
    """The line that tells the model how to read the rest of a long result."""
    return (
        f"[The full result has {total:,} characters. To read more, call read_result with "
        f'call_id="{call_id}" and an offset (a character position).]'
    )
