"""Layer 5, the runtime: hosts runs, numbers and fans out their events."""

from harness.runtime._agents_config import Overrides
from harness.runtime.agent import Agent
from harness.runtime.bus import EventBus, RunRecorder
from harness.runtime.harness import Harness
from harness.runtime.settings import Settings, harness_home, load_settings

__all__ = [
    "Agent",
    "EventBus",
    "Harness",
    "Overrides",
    "RunRecorder",
    "Settings",
    "harness_home",
    "load_settings",
]
