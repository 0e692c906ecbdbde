"""Identifiers: sortable by creation time, unique without coordination."""

from __future__ import annotations

import base64
import os
import time

__all__ = ["new_id"]


def new_id(prefix: str) -> str:
    """A new id such as `run_0ckq...`: 48 bits of milliseconds, then 80 random bits.

    The base32hex alphabet keeps the ids of one prefix in creation order when sorted.
    """
    raw = (time.time_ns() // 1_000_000).to_bytes(6, "big") + os.urandom(10)
    return f"{prefix}_{base64.b32hexencode(raw).decode('ascii')[:26].lower()}"
