"""Read a `/metrics` page over real HTTP and look samples up, with prometheus_client's parser."""

import asyncio
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample


@dataclass(frozen=True)
class Page:
    samples: list[Sample]
    content_type: str

    def value(self, name: str, **labels: str) -> float:
        """The one sample `name` whose labels include `labels` (0.0 when absent)."""
        found = [s.value for s in self.samples if s.name == name and _has(s.labels, labels)]
        assert len(found) <= 1, (name, labels, found)
        return found[0] if found else 0.0

    def total(self, name: str, **labels: str) -> float:
        """The sum of every sample `name` whose labels include `labels`."""
        return sum(s.value for s in self.samples if s.name == name and _has(s.labels, labels))

    def label_sets(self, name: str) -> list[dict[str, str]]:
        return [dict(s.labels) for s in self.samples if s.name == name]

    def names(self) -> set[str]:
        return {s.name for s in self.samples}


def _has(labels: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in wanted.items())


def parse(text: str, content_type: str = "") -> Page:
    families = text_string_to_metric_families(text)
    return Page([s for family in families for s in family.samples], content_type)


def get(url: str) -> Page:
    with urllib.request.urlopen(url, timeout=10) as response:
        return parse(response.read().decode(), response.headers["Content-Type"])


async def scrape(url: str) -> Page:
    """GET `url` from a thread: the server answers on this test's event loop."""
    return await asyncio.to_thread(get, url)
