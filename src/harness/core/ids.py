"""Identifiers: sortable by creation time, unique without coordination."""

from __future__ import annotations

import base64
import os
import random
import time

__all__ = ["new_id"]


def new_id(prefix: str) -> str:
    """A new id such as `run_0ckq...`: 48 bits of milliseconds, then 80 random bits.

    The base32hex alphabet keeps the ids of one prefix in creation order when sorted.
    """
    raw = (time.time_ns() // 1_000_000).to_bytes(6, "big") + _random.randbytes(10)
    return f"{prefix}_{base64.b32hexencode(raw).decode('ascii')[:26].lower()}"


# Ids need uniqueness, not secrecy: a generator seeded from the OS per process (and again
# in every forked child) gives that without a system call per id.
_random = random.Random(os.urandom(32))


def _reseed() -> None:
    _random.seed(os.urandom(32))


os.register_at_fork(after_in_child=_reseed)
