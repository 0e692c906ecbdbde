"""Counters and histograms kept in plain Python, read out as Prometheus samples at a scrape.

prometheus_client takes a lock and makes two or three calls for each `inc` or `observe`;
a run's dozen events cost more in it than in the rest of the metrics subscriber. Here a
series is a list of floats updated in place, on the event loop's thread, and
`harness.observability.metrics` turns the families into prometheus_client's `Metric`s
when it is scraped, sample for sample what its `Counter` and `Histogram` write: `_total`
and `_created` for a counter; cumulative `_bucket`s, `_count`, `_sum` and `_created` for a
histogram, labels in the family's order.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterator

__all__ = ["CounterFamily", "HistogramFamily", "Sample", "observe"]

Sample = tuple[str, dict[str, str], float]
"""A sample as prometheus_client's `Metric.add_sample` takes it: name, labels, value."""


class CounterFamily:
    """A counter's series by label values; a series is `[value, created]`."""

    __slots__ = ("doc", "labelnames", "name", "series")

    type = "counter"

    def __init__(self, name: str, doc: str, *labelnames: str) -> None:
        self.name = name
        self.doc = doc
        self.labelnames = labelnames
        self.series: dict[tuple[str, ...], list[float]] = {}

    def child(self, *labels: str) -> list[float]:
        """The series of `labels`, created (at 0, now) when first asked for."""
        found = self.series.get(labels)
        if found is None:
            found = self.series[labels] = [0.0, time.time()]
        return found

    def samples(self, created: bool) -> Iterator[Sample]:
        """`_total` (and `_created`) of each series, in the order they were created."""
        names = self.labelnames
        total, made = f"{self.name}_total", f"{self.name}_created"
        for labels, (value, when) in list(self.series.items()):
            yield total, dict(zip(names, labels, strict=True)), value
            if created:
                yield made, dict(zip(names, labels, strict=True)), when


class HistogramFamily:
    """A histogram's series by label values.

    A series is a list: the count of each bucket (the last one `+Inf`), then the sum of
    the observed values, then when it was created.
    """

    __slots__ = ("_le", "bounds", "doc", "labelnames", "name", "series")

    type = "histogram"

    def __init__(
        self, name: str, doc: str, buckets: tuple[float, ...], le: tuple[str, ...], *labels: str
    ) -> None:
        self.name = name
        self.doc = doc
        self.bounds = (*(float(b) for b in buckets), float("inf"))
        """The buckets' upper bounds, `+Inf` last."""
        self.labelnames = labels
        self.series: dict[tuple[str, ...], list[float]] = {}
        self._le = le

    def child(self, *labels: str) -> list[float]:
        """The series of `labels`, created (empty, now) when first asked for."""
        found = self.series.get(labels)
        if found is None:
            found = self.series[labels] = [0.0] * (len(self.bounds) + 1) + [time.time()]
        return found

    def samples(self, created: bool) -> Iterator[Sample]:
        """Each series' cumulative buckets, `_count`, `_sum` (and `_created`)."""
        names, n = self.labelnames, len(self.bounds)
        bucket, count, total = f"{self.name}_bucket", f"{self.name}_count", f"{self.name}_sum"
        for labels, series in list(self.series.items()):
            values = series[:]  # one reading, whatever is observed meanwhile
            base = dict(zip(names, labels, strict=True))
            running = 0.0
            for le, hits in zip(self._le, values[:n], strict=True):
                running += hits
                yield bucket, {**base, "le": le}, running
            yield count, dict(base), running
            yield total, dict(base), values[n]
            if created:
                yield f"{self.name}_created", dict(base), values[n + 1]


def observe(family: HistogramFamily, series: list[float], value: float) -> None:
    """Count `value` in its bucket of `series` and add it to the sum (NaN: to the sum only)."""
    if value == value:  # NaN falls in no bucket, as in prometheus_client
        series[bisect_left(family.bounds, value)] += 1
    series[-2] += value
