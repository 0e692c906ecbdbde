"""`harness experiments report`: how each variant of an A/B experiment did, from the store.

The runs of the experiment (`runs.experiment`) are read with one query, their step counts
from their `step_started` events in a few batched queries. Per variant:

- runs, and of them the ended ones (COMPLETED, FAILED or CANCELLED); rates count ended runs;
- completed runs (termination `final_answer`), the completion rate and its Wilson 95 %
  interval (`harness.observability._proportions`);
- termination reasons of the ended runs;
- steps per ended run (mean, p50, p95), tokens (input + output) per ended run;
- cost in US dollars per ended run and per completed run;
- latency p50/p95: from the run's start to its end, in seconds.

One line says whether the completion rates differ at 95 %: the two-proportion z-test for two
variants, Pearson's chi-square test for more.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from harness.core.states import TERMINAL_STATES
from harness.observability._proportions import homogeneity, two_proportion_z, wilson
from harness.observability.stats import percentile
from harness.store.protocol import EventStore, RunRecord

__all__ = ["ExperimentReport", "Significance", "VariantReport", "experiment_report"]


@dataclass(frozen=True, kw_only=True, slots=True)
class VariantReport:
    """How one variant did."""

    variant: str
    """The variant's name."""
    runs: int
    """Runs assigned to it."""
    ended: int
    """Of them, runs that ended; the rates below count these."""
    completed: int
    """Ended runs whose termination is `final_answer`."""
    completion_rate: float | None
    """`completed / ended`; `None` before any run ended."""
    interval: tuple[float, float] | None
    """The Wilson 95 % interval of the completion rate."""
    terminations: dict[str, int]
    """Ended runs by termination reason (`cancelled` for cancelled runs)."""
    steps_mean: float | None
    """Steps per ended run."""
    steps_p50: float | None
    """The median of steps per ended run."""
    steps_p95: float | None
    """The 95th percentile of steps per ended run."""
    tokens_per_run: float | None
    """Input plus output tokens per ended run."""
    cost_usd: float
    """The cost of its ended runs, in US dollars."""
    cost_per_run: float | None
    """`cost_usd / ended`."""
    cost_per_completed: float | None
    """`cost_usd / completed`: what one completed task costs."""
    latency_p50_s: float | None
    """The median seconds from start to end of its ended runs."""
    latency_p95_s: float | None
    """The 95th percentile of those seconds."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Significance:
    """Whether the variants' completion rates differ at 95 %."""

    test: str
    """`two-proportion z-test`, `chi-square test` or `none` (too few ended runs)."""
    statistic: float | None
    """z (two variants, first minus second) or χ²."""
    p_value: float | None
    """The two-sided p-value."""
    significant: bool
    """`p_value < 0.05`."""
    line: str
    """One sentence that says it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ExperimentReport:
    """The report of one experiment."""

    experiment: str
    """Its name."""
    variants: tuple[VariantReport, ...]
    """One per variant, in the order given (variants without runs included)."""
    significance: Significance
    """The test of equal completion rates."""

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-compatible data."""
        return asdict(self)


async def experiment_report(
    store: EventStore, experiment: str, variants: Sequence[str] = ()
) -> ExperimentReport:
    """The report of `experiment` from its runs in `store`.

    Args:
        store: The store.
        experiment: The experiment's name.
        variants: Its variants in the file's order; variants met only in the store follow.
    """
    records = await store.list_runs(experiment=experiment, limit=None)
    ended = [r for r in records if r.state in TERMINAL_STATES]
    steps = Counter(
        e.run_id
        for e in await store.events_of_runs([r.run_id for r in ended], types=("step_started",))
    )
    names = [*variants, *sorted({r.variant or "" for r in records} - set(variants))]
    reports = tuple(
        _variant(name, [r for r in records if r.variant == name], steps) for name in names
    )
    return ExperimentReport(
        experiment=experiment, variants=reports, significance=_significance(reports)
    )


def _variant(name: str, records: list[RunRecord], steps: Counter[str]) -> VariantReport:
    ended = [r for r in records if r.state in TERMINAL_STATES]
    done = sum(1 for r in ended if r.termination == "final_answer")
    counts = [float(steps[r.run_id]) for r in ended]
    cost = sum(r.usage.cost_usd for r in ended)
    tokens = sum(r.usage.input_tokens + r.usage.output_tokens for r in ended)
    seconds = [
        r.finished_at - (r.started_at or r.created_at) for r in ended if r.finished_at is not None
    ]
    n = len(ended)
    return VariantReport(
        variant=name,
        runs=len(records),
        ended=n,
        completed=done,
        completion_rate=done / n if n else None,
        interval=wilson(done, n),
        terminations=dict(Counter(r.termination or "cancelled" for r in ended).most_common()),
        steps_mean=sum(counts) / n if n else None,
        steps_p50=percentile(counts, 0.5),
        steps_p95=percentile(counts, 0.95),
        tokens_per_run=tokens / n if n else None,
        cost_usd=cost,
        cost_per_run=cost / n if n else None,
        cost_per_completed=cost / done if done else None,
        latency_p50_s=percentile(seconds, 0.5),
        latency_p95_s=percentile(seconds, 0.95),
    )


def _significance(variants: Sequence[VariantReport]) -> Significance:
    tested = [v for v in variants if v.ended > 0]
    if len(tested) < 2:
        return Significance(
            test="none",
            statistic=None,
            p_value=None,
            significant=False,
            line="not enough ended runs to compare completion rates (two variants need runs)",
        )
    if len(tested) == 2:
        a, b = tested
        statistic, p = two_proportion_z(a.completed, a.ended, b.completed, b.ended)
        test, shown = "two-proportion z-test", f"z = {statistic:.2f}"
    else:
        statistic, p = homogeneity([v.completed for v in tested], [v.ended for v in tested])
        test, shown = "chi-square test", f"chi2 = {statistic:.2f}, df = {len(tested) - 1}"
    best = max(tested, key=lambda v: v.completion_rate or 0.0)
    worst = min(tested, key=lambda v: v.completion_rate or 0.0)
    gap = ((best.completion_rate or 0.0) - (worst.completion_rate or 0.0)) * 100
    significant = p < 0.05
    verdict = "significant" if significant else "not significant"
    line = (
        f"completion rate {best.variant} {_pct(best.completion_rate)} vs {worst.variant} "
        f"{_pct(worst.completion_rate)} ({gap:.1f} points): {verdict} at 95 % "
        f"({test}, {shown}, p {_p(p)})"
    )
    return Significance(
        test=test, statistic=statistic, p_value=p, significant=significant, line=line
    )


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate * 100:.1f} %"


def _p(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"= {p:.3f}"
