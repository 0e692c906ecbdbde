"""Reading loosely typed JSON from providers: a wrong type reads as empty, never raises.

Shared by the wire and error modules of every provider.
"""

from __future__ import annotations

import json
from typing import Any, cast

__all__ = ["JSON", "as_dict", "as_int", "as_list", "as_text", "flat_excerpt", "json_excerpt"]

JSON = dict[str, Any]


def as_text(value: object) -> str:
    """`value` if it is a string, else `""`."""
    return value if isinstance(value, str) else ""


def as_int(value: object) -> int:
    """`value` if it is an integer (not a bool), else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def as_dict(value: object) -> JSON:
    """`value` if it is a JSON object, else `{}`."""
    return cast(JSON, value) if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    """`value` if it is a JSON array, else `[]`."""
    return cast("list[Any]", value) if isinstance(value, list) else []


def json_excerpt(value: object, limit: int = 200) -> str:
    """`value` as JSON text, cut at `limit` characters."""
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def flat_excerpt(text: str, limit: int = 160) -> str:
    """`text` on one line, cut at `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"
