"""`ChildLimits`: how far the trees of runs that agent tools grow may reach (`[children]`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ChildLimits"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ChildLimits:
    """Bounds on child runs (`[children]` of harness.toml, or `Harness(child_limits=...)`).

    A call of an agent tool past either bound gets a tool error the model can act on; no
    child run is created.
    """

    max_depth: int = 5
    """How deep a child may be: 1 is a child of a run that is no child."""
    max_children: int = 100
    """How many children one run may start, over its whole life."""
