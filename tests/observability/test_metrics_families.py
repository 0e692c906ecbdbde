"""The plain-Python counters and histograms write what prometheus_client's own would.

The same values go into a `Counter` and a `Histogram` of prometheus_client and into the
metrics' families; the two registries' pages must be equal, line for line, but for the
`_created` times (each side's own clock).
"""

import math
import re

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from harness.observability._families import CounterFamily, observe
from harness.observability.metrics import FamilyCollector, histogram

BUCKETS = (0.005, 0.5, 1, 2.5, 300, 2**20)  # 2**20 is written 1.048576e+06
VALUES = (0.0, 0.005, 0.0051, 0.5, 1, 1.0, 2.5, 299.9, 300, 2**20, 2**21, math.inf, math.nan)


def page(registry: CollectorRegistry) -> str:
    text = generate_latest(registry).decode()
    return re.sub(r"(_created\{[^}]*\}) \S+", r"\1 T", text)


def ours(*families: object) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=True)
    registry.register(FamilyCollector(families))  # type: ignore[arg-type]
    return registry


def test_a_histogram_is_written_as_prometheus_client_writes_it() -> None:
    theirs = CollectorRegistry()
    reference = Histogram("h_seconds", "A histogram.", ["tool"], registry=theirs, buckets=BUCKETS)
    family = histogram("h_seconds", "A histogram.", BUCKETS, "tool")
    for tool in ("b", "a"):
        for value in VALUES:
            reference.labels(tool).observe(value)
            observe(family, family.child(tool), value)
    expected = page(theirs)
    assert 'le="1.048576e+06"' in expected
    assert "NaN" in expected  # the sum, as prometheus_client keeps it
    assert page(ours(family)) == expected


def test_a_counter_is_written_as_prometheus_client_writes_it() -> None:
    theirs = CollectorRegistry()
    reference = Counter("c_total", "A counter.", ["model", "kind"], registry=theirs)
    family = CounterFamily("c", "A counter.", "model", "kind")
    counts = ((("m", "input"), 3), (("m", "output"), 0.25), (("n", "in"), 7), (("m", "input"), 2))
    for labels, amount in counts:
        reference.labels(*labels).inc(amount)
        family.child(*labels)[0] += amount
    assert page(ours(family)) == page(theirs)


def test_a_series_appears_once_made_and_keeps_its_creation_time() -> None:
    family = CounterFamily("c", "A counter.", "model")
    assert list(family.samples(True)) == []
    first = family.child("m")
    assert family.child("m") is first
    total, created = family.samples(True)
    assert total == ("c_total", {"model": "m"}, 0.0)
    assert created == ("c_created", {"model": "m"}, first[1])
    assert [name for name, _, _ in family.samples(False)] == ["c_total"]


def test_two_families_of_one_name_cannot_be_registered_together() -> None:
    registry = ours(CounterFamily("c", "A counter."))
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        registry.register(FamilyCollector([CounterFamily("c", "Again.")]))
