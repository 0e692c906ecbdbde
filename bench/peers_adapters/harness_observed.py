"""harness, durable, observed: `harness_traced` with Prometheus metrics kept as well.

An adapter for ../shared/bench/peers (copied next to its adapters by bench/durable.py
--observed). Every span goes over OTLP/HTTP to a do-nothing receiver in a process of its
own (as in `harness_traced`), and the Harness keeps its run metrics (`metrics=True`):
everything observability costs a durable run, together.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import harness_durable, harness_traced
from .harness_durable import run_once

NAME = "harness, durable + OTLP traces + metrics"
DISTS: tuple[str, ...] = ("harness", "opentelemetry-sdk")
FLOOR = "raw_durable"

__all__ = ["run_once", "setup", "teardown"]


async def setup(workdir: str) -> None:
    from harness import Harness
    from harness.runtime import Settings

    sink, port = harness_traced._start_sink()
    harness_traced._sink = sink
    os.environ["OTEL_TRACES_EXPORTER"] = "otlp"
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{port}"
    await harness_durable.setup(workdir)
    await harness_durable._harness.aclose()  # reopened with metrics on
    harness_durable._harness = Harness(
        Settings(home=Path(workdir)), max_concurrent=2000, adopt=False, metrics=True
    )
    await harness_durable._harness.open()


async def teardown() -> None:
    await harness_traced.teardown()
