"""Identifiers: sortable by creation time, unique without coordination."""

from __future__ import annotations

import os
import random
import re
import time
from typing import Final

from harness.errors import ConfigError

__all__ = ["TASK_TYPE_RULE", "check_task_type", "derived_id", "new_id"]

TASK_TYPE_RULE: Final = "1 to 64 letters, digits and . _ : - (e.g. refund or billing.refund)"
"""What a task type may be: a short label, so that it can name a metric or a cost line."""

_TASK_TYPE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")

_BASE32HEX: Final = "0123456789abcdefghijklmnopqrstuv"
_PAIRS: Final = tuple(a + b for a in _BASE32HEX for b in _BASE32HEX)
"""The two characters that encode each 10-bit value."""


def new_id(prefix: str) -> str:
    """A new id such as `run_0ckq...`: 48 bits of milliseconds, then 80 random bits.

    They are written as the 26 characters of lower-case base32hex (RFC 4648) that encode
    those 16 bytes, whose alphabet keeps the ids of one prefix in creation order when
    sorted. Ten bits at a time, from a table: `base64.b32hexencode` costs five times more.
    """
    n = ((time.time_ns() // 1_000_000) << 82) | (_random.getrandbits(80) << 2)
    p = _PAIRS
    return (
        f"{prefix}_{p[n >> 120]}{p[n >> 110 & 1023]}{p[n >> 100 & 1023]}{p[n >> 90 & 1023]}"
        f"{p[n >> 80 & 1023]}{p[n >> 70 & 1023]}{p[n >> 60 & 1023]}{p[n >> 50 & 1023]}"
        f"{p[n >> 40 & 1023]}{p[n >> 30 & 1023]}{p[n >> 20 & 1023]}{p[n >> 10 & 1023]}"
        f"{p[n & 1023]}"
    )


def derived_id(prefix: str, at: float, key: str) -> str:
    """The id `new_id` would write, with its time `at` and its random bits drawn from `key`.

    The same `prefix`, `at` and `key` always give the same id, in every process: an id
    derived from what caused a run (a trigger and the event that fired it) makes the
    store's uniqueness of ids turn a second start of that run into a conflict. It sorts
    among `new_id`'s ids by `at` (seconds since the epoch).
    """
    import hashlib  # here: loading OpenSSL's hashes costs `import harness` about 3 ms

    digest = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=10).digest())
    n = (int(at * 1000) << 82) | (digest << 2)
    return prefix + "_" + "".join(_PAIRS[n >> shift & 1023] for shift in range(120, -1, -10))


def check_task_type(task_type: str | None) -> str | None:
    """`task_type` when it is a valid label (or `None`).

    Raises:
        ConfigError: It breaks `TASK_TYPE_RULE`; the message quotes it and the rule.
    """
    if task_type is None or _TASK_TYPE.fullmatch(task_type):
        return task_type
    raise ConfigError(f"task type {task_type!r} is not a label: use {TASK_TYPE_RULE}")


# Ids need uniqueness, not secrecy: a generator seeded from the OS per process (and again
# in every forked child) gives that without a system call per id.
_random = random.Random(os.urandom(32))


def _reseed() -> None:
    _random.seed(os.urandom(32))


os.register_at_fork(after_in_child=_reseed)
