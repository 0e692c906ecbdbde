"""Layer 4, context: token counting and the context window manager (DESIGN.md §7)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.memory.tokens import TokenCounter, estimate_text
    from harness.memory.window import (
        Compaction,
        ContextPolicy,
        ContextState,
        Prepared,
        Tier,
        WindowManager,
    )

_HOMES = {
    "harness.memory.tokens": ("TokenCounter", "estimate_text"),
    "harness.memory.window": (
        "Compaction",
        "ContextPolicy",
        "ContextState",
        "Prepared",
        "Tier",
        "WindowManager",
    ),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "Compaction",
    "ContextPolicy",
    "ContextState",
    "Prepared",
    "Tier",
    "TokenCounter",
    "WindowManager",
    "estimate_text",
]


def __getattr__(name: str) -> Any:
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module 'harness.memory' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
