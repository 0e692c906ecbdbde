"""Which variant a run gets: by weight, fixed per key, and which experiment applies."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.runtime._agents_config import ExperimentConfig, VariantConfig
from harness.runtime._catalog import AgentCatalog
from harness.runtime.experiments import assign_variant
from harness.runtime.settings import load_settings


def experiment(**weights: float) -> ExperimentConfig:
    variants = tuple(VariantConfig(name=n, weight=w) for n, w in weights.items())
    return ExperimentConfig(name="e", task_type="t", variants=variants)


def test_keys_spread_over_the_variants_by_weight_and_a_zero_weight_gets_none() -> None:
    split = experiment(a=3, b=1, c=0)
    seen = Counter(assign_variant(split, f"run_{n}", None) for n in range(8000))
    assert set(seen) == {"a", "b"}
    assert 0.72 <= seen["a"] / 8000 <= 0.78


def test_the_same_key_gets_the_same_variant_and_names_decide_apart() -> None:
    by_user = ExperimentConfig(
        name="e", task_type="t", key="user", variants=experiment(a=1, b=1).variants
    )
    first = [assign_variant(by_user, f"run_{n}", "alice") for n in range(50)]
    assert len(set(first)) == 1
    other = ExperimentConfig(name="other", task_type="t", key="user", variants=by_user.variants)
    users = [f"user-{n}" for n in range(200)]
    same = sum(assign_variant(by_user, "r", u) == assign_variant(other, "r", u) for u in users)
    assert 60 < same < 140  # two experiments draw independently
    with pytest.raises(ConfigError, match="experiment_key"):
        assign_variant(by_user, "run_1", None)
    assert assign_variant(by_user, "run_1", None, keep="b") == "b"


def test_a_task_types_experiment_wins_over_an_agents(tmp_path: Path) -> None:
    (tmp_path / "harness.toml").write_text(
        "[agents.support]\ntools = []\n"
        '[experiments.by-agent]\nagent = "support"\n'
        "variants = { a = { weight = 1 }, b = { weight = 1 } }\n"
        '[experiments.by-type]\ntask_type = "refund"\n'
        "variants = { x = { weight = 1 }, y = { weight = 1 } }\n"
    )
    catalog = AgentCatalog(load_settings(tmp_path))
    assert catalog.experiment_for("support", None).name == "by-agent"  # type: ignore[union-attr]
    assert catalog.experiment_for("support", "refund").name == "by-type"  # type: ignore[union-attr]
    assert catalog.experiment_for("other", None) is None
