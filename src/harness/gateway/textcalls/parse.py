"""`parse_text`: a model's raw reply into answer, reasoning, calls and malformed calls."""

from __future__ import annotations

from collections.abc import Sequence

from harness.core.ids import new_id
from harness.core.messages import ToolCall, ToolDefinition
from harness.gateway.textcalls._types import (
    Body,
    CallItem,
    MalformedCall,
    ParseContext,
    PartialCall,
    TextParse,
)
from harness.gateway.textcalls.auto import AutoFormat
from harness.gateway.textcalls.base import TextFormat
from harness.gateway.textcalls.registry import family_format, get_format

__all__ = ["parse_text", "resolve_format"]


def resolve_format(format: str = "auto", *, model_family: str | None = None) -> TextFormat:
    """The format object for a name; `auto` falls back on the family's format.

    Raises:
        ConfigError: The name is not a known format.
    """
    if format != "auto":
        return get_format(format)
    family = family_format(model_family)
    return AutoFormat(get_format(family) if family else None)


def parse_text(
    text: str,
    format: str | TextFormat = "auto",
    *,
    tools: Sequence[ToolDefinition] = (),
    model_family: str | None = None,
    thinking_forced_open: bool = False,
    partial: bool = False,
) -> TextParse:
    """Split a model's raw reply into its answer, its reasoning and its tool calls.

    Args:
        text: The reply exactly as the model wrote it, special tokens included.
        format: A format name (`hermes`, `harmony`, ...), `auto`, or a format object.
        tools: The offered tools: XML formats type their values by these schemas.
        model_family: The model's name, which `auto` uses when the text has no marker.
        thinking_forced_open: The prompt ends inside `<think>`: the reply starts with
            reasoning.
        partial: `text` is a snapshot of a reply still arriving: a call cut off at the end
            is reported as `partial` instead of as malformed.

    Returns:
        The parse. Calls written inside reasoning are not among its calls.

    Raises:
        ConfigError: `format` is not a known format name.
    """
    chosen = format
    if isinstance(chosen, str):
        chosen = resolve_format(chosen, model_family=model_family)
    context = ParseContext(tools=tuple(tools), thinking_forced_open=thinking_forced_open)
    if isinstance(chosen, AutoFormat):
        chosen = chosen.resolve(text, context)
    return assemble(chosen.read(text, context), chosen, partial=partial)


def assemble(body: Body, chosen: TextFormat, *, partial: bool = False) -> TextParse:
    """The `TextParse` of what a format read."""
    items = list(body.items)
    pending: PartialCall | None = None
    if partial and items and _is_cut_off(items[-1]):
        pending = _partial(items.pop())
    calls: list[ToolCall] = []
    malformed: list[MalformedCall] = []
    seen: set[str] = set()
    for item in items:
        if isinstance(item, MalformedCall):
            malformed.append(item)
            continue
        call_id = item.id if item.id and item.id not in seen else new_id("call")
        seen.add(call_id)
        calls.append(ToolCall(id=call_id, name=item.name, arguments=item.arguments))
    return TextParse(
        content=chosen.unhide("".join(body.content)).strip() or None,
        reasoning="\n\n".join(p.strip() for p in body.reasoning if p.strip()) or None,
        calls=tuple(calls),
        malformed=tuple(malformed),
        format=chosen.name,
        partial=pending,
    )


def _is_cut_off(item: CallItem | MalformedCall) -> bool:
    return item.truncated if isinstance(item, MalformedCall) else item.cut_off


def _partial(item: CallItem | MalformedCall) -> PartialCall:
    if isinstance(item, CallItem):
        return PartialCall(name=item.name, arguments=item.arguments)
    return PartialCall(name=item.name, arguments=item.arguments or "")
