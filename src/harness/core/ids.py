"""Identifiers: sortable by creation time, unique without coordination."""

from __future__ import annotations

import os
import random
import re
import time
from typing import Any, Final

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
    sorted. Ten bits at a time, from a table (`base64.b32hexencode` costs five times
    more); the first eight characters, the milliseconds but their last 8 bits, change
    every 256 ms and are kept; the random bits are drawn as three small ints (30, 30 and
    20 bits: no arithmetic on a 130-bit int).
    """
    ms = time.time_ns() // 1_000_000
    p, clock = _PAIRS, _clock
    if ms >> 8 != clock[0]:
        clock[:] = [ms >> 8, _written(ms >> 8)]
    a, b, c = _bits(30), _bits(30), _bits(20)
    return (
        f"{prefix}_{clock[1]}{p[(ms & 255) << 2 | a >> 28]}{p[a >> 18 & 1023]}"
        f"{p[a >> 8 & 1023]}{p[(a & 255) << 2 | b >> 28]}{p[b >> 18 & 1023]}{p[b >> 8 & 1023]}"
        f"{p[(b & 255) << 2 | c >> 18]}{p[c >> 8 & 1023]}{p[(c & 255) << 2]}"
    )


def _written(high: int) -> str:
    """The first eight characters of an id: the 40 high bits of its milliseconds."""
    p = _PAIRS
    return f"{p[high >> 30]}{p[high >> 20 & 1023]}{p[high >> 10 & 1023]}{p[high & 1023]}"


_clock: list[Any] = [-1, ""]
"""The milliseconds of the last id, but their last 8 bits, and its first eight characters."""


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
_bits = _random.getrandbits


def _reseed() -> None:
    _random.seed(os.urandom(32))


os.register_at_fork(after_in_child=_reseed)
