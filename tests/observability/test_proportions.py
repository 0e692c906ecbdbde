"""The statistics of `harness experiments report`, against published values."""

from __future__ import annotations

import math

import pytest

from harness.observability._proportions import (
    chi_square_p,
    homogeneity,
    two_proportion_z,
    wilson,
)


def test_the_wilson_interval_matches_published_values() -> None:
    # Newcombe (1998), table I: 81/263 -> 0.2553 to 0.3662; 0/10 -> 0 to 0.2775
    assert wilson(81, 263) == pytest.approx((0.2553, 0.3662), abs=1e-4)
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson(10, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)
    assert wilson(0, 0) is None


@pytest.mark.parametrize(
    ("statistic", "freedom", "p"),
    [
        (3.841458820694124, 1, 0.05),
        (6.634896601021214, 1, 0.01),
        (5.991464547107979, 2, 0.05),
        (7.814727903251178, 3, 0.05),
        (1.0, 5, 0.9625657732472964),
        (30.0, 4, 4.894437e-06),
        (0.0, 3, 1.0),
    ],
)
def test_the_chi_square_tail_matches_the_tables(statistic: float, freedom: int, p: float) -> None:
    assert chi_square_p(statistic, freedom) == pytest.approx(p, rel=1e-5)


def test_two_variants_give_the_same_p_value_by_z_and_by_chi_square() -> None:
    z, p = two_proportion_z(160, 200, 100, 200)
    assert z == pytest.approx(0.3 / math.sqrt(0.65 * 0.35 * (2 / 200)))
    assert p == pytest.approx(math.erfc(abs(z) / math.sqrt(2)))
    chi2, p_chi = homogeneity([160, 100], [200, 200])
    assert chi2 == pytest.approx(z * z)
    assert p_chi == pytest.approx(p)


def test_identical_outcomes_are_no_evidence_of_a_difference() -> None:
    assert two_proportion_z(10, 10, 20, 20) == (0.0, 1.0)
    assert homogeneity([0, 0, 0], [5, 6, 7]) == (0.0, 1.0)
