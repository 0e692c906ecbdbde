"""A/B experiments: which variant a run gets, decided by its key alone.

A run's variant is a pure function of the experiment's name and the key (the run id, or a
caller's key such as a user id): the key's SHA-256 with the name, read as a number in
[0, 1), falls in one variant's share of the summed weights. The same key always gets the
same variant, in any process; keys spread over the variants in proportion to their weights.
A stopped experiment (`keep = "V"` in the file, or `harness experiments stop`) gives every
run its kept variant.
"""

from __future__ import annotations

import hashlib

from harness.errors import ConfigError
from harness.runtime._agents_config import ExperimentConfig

__all__ = ["assign_variant", "key_point"]


def key_point(experiment: str, key: str) -> float:
    """Where `key` falls in [0, 1) for `experiment`: uniform over keys, fixed per key."""
    digest = hashlib.sha256(f"{experiment}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def assign_variant(
    experiment: ExperimentConfig, run_id: str, key: str | None, *, keep: str | None = None
) -> str:
    """The variant of a run of `experiment`.

    Args:
        experiment: The experiment.
        run_id: The run's id: the key when the experiment's `key` is `"run_id"`.
        key: The caller's key (`experiment_key`), used when the experiment's `key` is
            `"user"`.
        keep: The variant a stopped experiment sends every run to.

    Raises:
        ConfigError: The experiment assigns by a caller's key and none was given.
    """
    if keep is not None:
        return keep
    if experiment.key == "user":
        if not key:
            raise ConfigError(
                f"experiment {experiment.name!r} assigns variants by the caller's key "
                '(key = "user"): pass experiment_key=… (harness run --experiment-key …)'
            )
    else:
        key = run_id
    weights = [(v.name, v.weight) for v in experiment.variants if v.weight > 0]
    point = key_point(experiment.name, key) * sum(w for _, w in weights)
    for name, weight in weights:
        if point < weight:
            return name
        point -= weight
    return weights[-1][0]  # float rounding at the very top of the range
