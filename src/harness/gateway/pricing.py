"""Prices of a model, and what a response cost in US dollars.

`Prices` is core vocabulary (`harness.core.usage`), so that events can carry the prices a
request was charged at; it is re-exported here, where the gateway prices responses.
"""

from __future__ import annotations

from harness.core.usage import Prices

__all__ = ["Prices"]
