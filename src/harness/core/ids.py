"""Identifiers: sortable by creation time, unique without coordination."""

from __future__ import annotations

import base64
import os
import random
import re
import time
from typing import Final

from harness.errors import ConfigError

__all__ = ["TASK_TYPE_RULE", "check_task_type", "new_id"]

TASK_TYPE_RULE: Final = "1 to 64 letters, digits and . _ : - (e.g. refund or billing.refund)"
"""What a task type may be: a short label, so that it can name a metric or a cost line."""

_TASK_TYPE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def new_id(prefix: str) -> str:
    """A new id such as `run_0ckq...`: 48 bits of milliseconds, then 80 random bits.

    The base32hex alphabet keeps the ids of one prefix in creation order when sorted.
    """
    raw = (time.time_ns() // 1_000_000).to_bytes(6, "big") + _random.randbytes(10)
    return f"{prefix}_{base64.b32hexencode(raw).decode('ascii')[:26].lower()}"


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
