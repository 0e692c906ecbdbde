"""Calls written as JSON objects (`{"name": ..., "arguments": {...}}` and its cousins)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from harness.gateway.textcalls._json import (
    describe,
    is_cut_off,
    loads,
    loads_repaired,
    normalize_arguments,
    scan_object,
)
from harness.gateway.textcalls._types import CallItem, Item, MalformedCall

__all__ = [
    "call_from_object",
    "calls_from_json",
    "items_from_value",
    "named_call",
    "partial_object",
]

NAME_KEYS = ("name",)
ARGUMENT_KEYS = ("arguments", "parameters")


def call_from_object(
    value: object,
    *,
    name_keys: Sequence[str] = NAME_KEYS,
    argument_keys: Sequence[str] = ARGUMENT_KEYS,
    id_key: str | None = "id",
) -> CallItem | str:
    """The call an object describes, or what is wrong with it."""
    if not isinstance(value, dict):
        return "a call must be a JSON object with a name and arguments"
    obj = cast(dict[str, Any], value)
    function = obj.get("function")
    if isinstance(function, dict) and "name" not in obj:  # {"function": {"name": ...}}
        obj = cast(dict[str, Any], function)
    name = next((obj[k] for k in name_keys if k in obj), None)
    if not isinstance(name, str) or not name.strip():
        return f'the call has no "{name_keys[0]}" (the tool name as a string)'
    arguments = next((obj[k] for k in argument_keys if k in obj), None)
    call_id = obj.get(id_key) if id_key else None
    return CallItem(
        name=name.strip(),
        arguments=normalize_arguments(arguments),
        id=str(call_id) if isinstance(call_id, str | int) and str(call_id) else None,
    )


def calls_from_json(
    text: str,
    markup: str,
    *,
    name_keys: Sequence[str] = NAME_KEYS,
    argument_keys: Sequence[str] = ARGUMENT_KEYS,
    id_key: str | None = "id",
    closed: bool = True,
) -> list[Item]:
    """The calls in one block of JSON (an object, or a list of objects).

    Args:
        text: The JSON text of the block.
        markup: The whole block as written, kept in any `MalformedCall`.
        name_keys: Keys that may hold the tool name.
        argument_keys: Keys that may hold the arguments.
        id_key: The key that may hold the call's id.
        closed: Whether the block had its closing marker; an open block that ends
            mid-JSON is reported as cut off.
    """
    try:
        value, _ = loads_repaired(text)
    except ValueError as error:
        cut = not closed and is_cut_off(text, error)
        name, raw = partial_object(text)
        problem = describe(text, error)
        return [
            MalformedCall(text=markup, problem=problem, name=name, arguments=raw, truncated=cut)
        ]
    return items_from_value(
        value, markup, name_keys=name_keys, argument_keys=argument_keys, id_key=id_key
    )


def items_from_value(
    value: object,
    markup: str,
    *,
    name_keys: Sequence[str] = NAME_KEYS,
    argument_keys: Sequence[str] = ARGUMENT_KEYS,
    id_key: str | None = "id",
) -> list[Item]:
    """The calls in a decoded JSON value: one call object, or a list of them."""
    values = cast(list[object], value) if isinstance(value, list) else [value]
    items: list[Item] = []
    for entry in values:
        found = call_from_object(
            entry, name_keys=name_keys, argument_keys=argument_keys, id_key=id_key
        )
        if isinstance(found, str):
            found = MalformedCall(text=markup, problem=found)
        items.append(found)
    if not items:
        items.append(MalformedCall(text=markup, problem="the list of calls is empty"))
    return items


def partial_object(text: str) -> tuple[str | None, str | None]:
    """The name and the raw arguments so far of a call object that may be cut off."""
    members = scan_object(text)
    raw_name, complete = members.get("name", ("", False))
    decoded = loads(raw_name) if complete else None
    name = decoded if isinstance(decoded, str) else None
    raw = next((members[k][0] for k in ARGUMENT_KEYS if k in members), None)
    return name, raw


def named_call(
    name: str, arguments: str, *, call_id: str | None = None, closed: bool = True
) -> CallItem:
    """A call whose name stands outside its JSON arguments, so the name is certain.

    Arguments that are not valid JSON even after the unambiguous repairs are kept as they
    were written: the tool then tells the model what is wrong with them.
    """
    text = arguments.strip()
    if not text:
        return CallItem(name=name, arguments="{}", id=call_id)
    try:
        value, _ = loads_repaired(text)
    except ValueError as error:
        cut = not closed and is_cut_off(text, error)
        return CallItem(name=name, arguments=text, id=call_id, cut_off=cut)
    return CallItem(name=name, arguments=normalize_arguments(value), id=call_id)
