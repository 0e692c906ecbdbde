"""Layer 5, the runtime: hosts runs, numbers and fans out their events."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.runtime._agents_config import Overrides
    from harness.runtime.agent import Agent
    from harness.runtime.bus import EventBus, RunRecorder
    from harness.runtime.harness import Harness
    from harness.runtime.registry import RegisteredTool, ToolRegistry
    from harness.runtime.settings import Settings, harness_home, load_settings

_HOMES = {
    "harness.runtime._agents_config": ("Overrides",),
    "harness.runtime.agent": ("Agent",),
    "harness.runtime.bus": ("EventBus", "RunRecorder"),
    "harness.runtime.harness": ("Harness",),
    "harness.runtime.registry": ("RegisteredTool", "ToolRegistry"),
    "harness.runtime.settings": ("Settings", "harness_home", "load_settings"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "Agent",
    "EventBus",
    "Harness",
    "Overrides",
    "RegisteredTool",
    "RunRecorder",
    "Settings",
    "ToolRegistry",
    "harness_home",
    "load_settings",
]


def __getattr__(name: str) -> Any:
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module 'harness.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
