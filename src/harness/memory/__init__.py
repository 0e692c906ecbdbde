"""Layer 4, context: token counting and the context window manager (DESIGN.md §7)."""

from harness.memory.tokens import TokenCounter, estimate_text
from harness.memory.window import (
    Compaction,
    ContextPolicy,
    ContextState,
    Prepared,
    Tier,
    WindowManager,
)

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
