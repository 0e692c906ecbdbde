"""harness on Temporal: a run is a workflow, model and tool calls are its activities.

The one home of the `temporalio` SDK (installed with `pip install 'harness[temporal]'`).
Importing this package loads nothing heavy: each module imports `temporalio` itself, so
`import harness.distributed.temporal` works, and is cheap, without the extra installed.
"""

from __future__ import annotations

__all__ = ["TEMPORAL_EXTRA_HINT", "require_temporal", "temporal_installed"]

TEMPORAL_EXTRA_HINT = "pip install 'harness[temporal]'"
"""The command that installs what the Temporal backend needs."""


def temporal_installed() -> bool:
    """Whether the `temporalio` SDK can be imported here (found, not imported)."""
    import importlib.util

    try:
        return importlib.util.find_spec("temporalio") is not None
    except ImportError:  # a finder that refuses it (an environment that forbids it)
        return False


def require_temporal() -> None:
    """Fails clearly when the `temporalio` SDK cannot be imported here.

    Raises:
        ConfigError: It is not installed; the message says how to install it.
    """
    if not temporal_installed():
        from harness.errors import ConfigError

        raise ConfigError(
            '[runtime] backend = "temporal" needs the temporalio SDK, which is not installed '
            f"here: {TEMPORAL_EXTRA_HINT}"
        )
