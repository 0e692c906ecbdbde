"""Statistics of completion rates: Wilson intervals and tests of equal proportions.

- Wilson score interval (95 %): with p = k/n and z = 1.959964,
  centre = (p + z²/2n) / (1 + z²/n), half-width = z·√(p(1−p)/n + z²/4n²) / (1 + z²/n).
- Two variants: the pooled two-proportion z-test. With P = (k₁+k₂)/(n₁+n₂),
  z = (p₁ − p₂) / √(P(1−P)(1/n₁ + 1/n₂)); the two-sided p-value is erfc(|z|/√2).
- More variants: Pearson's chi-square test of homogeneity of the 2×k table (completed or
  not, by variant), k − 1 degrees of freedom; the p-value is the regularized upper
  incomplete gamma Q((k−1)/2, χ²/2), by its series below a+1 and its continued fraction
  above (for two variants χ² = z², the same p-value).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

__all__ = ["Z95", "chi_square_p", "homogeneity", "two_proportion_z", "wilson"]

Z95: Final = 1.959963984540054
"""The two-sided 95 % quantile of the standard normal distribution."""
_EPS: Final = 1e-15
_ITERATIONS: Final = 500


def wilson(completed: int, runs: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of `completed / runs`; `None` without runs."""
    if runs <= 0:
        return None
    p = completed / runs
    denominator = 1 + z * z / runs
    centre = (p + z * z / (2 * runs)) / denominator
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def two_proportion_z(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float]:
    """The pooled z statistic of `k1/n1 − k2/n2` and its two-sided p-value."""
    pooled = (k1 + k2) / (n1 + n2)
    spread = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if spread == 0:
        return 0.0, 1.0  # every run ended the same way: no evidence of a difference
    z = (k1 / n1 - k2 / n2) / spread
    return z, math.erfc(abs(z) / math.sqrt(2))


def homogeneity(completed: Sequence[int], runs: Sequence[int]) -> tuple[float, float]:
    """Pearson's χ² of equal completion rates across variants, and its p-value."""
    total_runs, total_done = sum(runs), sum(completed)
    rate = total_done / total_runs
    statistic = 0.0
    for k, n in zip(completed, runs, strict=True):
        for observed, expected in ((k, n * rate), (n - k, n * (1 - rate))):
            if expected > 0:
                statistic += (observed - expected) ** 2 / expected
    return statistic, chi_square_p(statistic, len(runs) - 1)


def chi_square_p(statistic: float, freedom: int) -> float:
    """P(χ² with `freedom` degrees of freedom ≥ `statistic`)."""
    if statistic <= 0:
        return 1.0
    a, x = freedom / 2, statistic / 2
    if x < a + 1:
        return max(0.0, 1.0 - _lower_series(a, x))
    return min(1.0, _upper_fraction(a, x))


def _lower_series(a: float, x: float) -> float:
    """The regularized lower incomplete gamma P(a, x), by its power series."""
    term = total = 1.0 / a
    denominator = a
    for _ in range(_ITERATIONS):
        denominator += 1
        term *= x / denominator
        total += term
        if abs(term) < abs(total) * _EPS:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _upper_fraction(a: float, x: float) -> float:
    """The regularized upper incomplete gamma Q(a, x), by its continued fraction (Lentz)."""
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, _ITERATIONS):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < _EPS:
            break
    return h * math.exp(-x + a * math.log(x) - math.lgamma(a))
