"""The small-sample tests and the distances from counts, at their edges and against scipy on the same samples.

``test_stats.py`` compares the distances with scipy and Evidently on realistic data; these pin what
the drift judge reads at the edges: the KS p-value on both sides of scipy's exact-distribution limit,
the chi-squared test's dropped categories and single category, PSI's zero fill at its threshold,
the decile grouping, the Wasserstein floor for a constant reference, and the empty sides that score NaN.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats
from scipy.spatial import distance

from mlops.model.reference_profile import numeric_profile
from mlops.monitoring import stats
from mlops.monitoring.request_window import NumericCounts


def _expanded(counts: list[int]) -> np.ndarray:
    return np.repeat(np.arange(len(counts)), counts)


def _scipy_ks(reference: list[int], current: list[int], method: str) -> tuple[float, float]:
    result = scipy_stats.ks_2samp(_expanded(reference), _expanded(current), method=method)
    return float(result.statistic), float(result.pvalue)


def test_ks_of_small_samples_is_scipys_exact_test_on_the_bin_indices() -> None:
    reference, current = [5, 9, 3, 0, 2], [1, 2, 6, 4, 0]
    assert stats.ks_binned(np.array(reference), np.array(current)) == _scipy_ks(reference, current, "exact")


def test_ks_at_the_exact_limit_is_exact_and_one_row_over_is_asymptotic() -> None:
    at_limit, current = [4000, 3000, 3000], [10, 5, 15]
    assert sum(at_limit) == stats.EXACT_KS_ROWS == 10_000
    exact = _scipy_ks(at_limit, current, "exact")
    assert stats.ks_binned(np.array(at_limit), np.array(current)) == exact
    assert exact[1] != pytest.approx(_scipy_ks(at_limit, current, "asymp")[1], rel=1e-6)  # the edge shows

    over = [4001, 3000, 3000]
    d, p = stats.ks_binned(np.array(over), np.array(current))
    want_d, want_p = _scipy_ks(over, current, "asymp")
    assert d == pytest.approx(want_d, rel=1e-12) and p == pytest.approx(want_p, rel=1e-9)
    assert p == pytest.approx(scipy_stats.kstwo.sf(want_d, round(10_001 * 30 / 10_031)), rel=1e-12)


def test_ks_of_two_large_samples_uses_the_asymptotic_distribution() -> None:
    reference, current = [6000, 5000, 4000, 5000], [3000, 4000, 4000, 4500]
    d, p = stats.ks_binned(np.array(reference), np.array(current))
    want_d, want_p = _scipy_ks(reference, current, "asymp")
    assert d == pytest.approx(want_d, rel=1e-12) and p == pytest.approx(want_p, rel=1e-9)
    assert 0 < p < 1


@pytest.mark.parametrize(("reference", "current"), [([0, 0], [3, 1]), ([2, 5], [0, 0]), ([0, 0], [0, 0])])
def test_ks_with_an_empty_side_is_nan_without_scipys_warning(
    reference: list[int], current: list[int]
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy warns on an empty sample: the monitor would log one per window
        d, p = stats.ks_binned(np.array(reference), np.array(current))
    assert math.isnan(d) and math.isnan(p)


@pytest.mark.parametrize(("reference", "current"), [([0, 1, 0], [3, 1, 2]), ([4, 0, 2], [0, 0, 1])])
def test_ks_of_a_single_row_on_either_side_is_a_test_not_nan(
    reference: list[int], current: list[int]
) -> None:
    assert stats.ks_binned(np.array(reference), np.array(current)) == _scipy_ks(reference, current, "exact")


def test_ks_takes_counts_held_as_floats() -> None:
    """Counts as ``categorical_vectors`` and ``deciles`` hold them (float64) give the same test."""
    reference, current = [5, 9, 3, 0, 2], [1, 2, 6, 4, 0]
    as_floats = stats.ks_binned(np.array(reference, dtype=float), np.array(current, dtype=float))
    assert as_floats == _scipy_ks(reference, current, "exact")


def test_chi_square_of_two_categories_is_the_two_proportion_z_test_squared() -> None:
    reference, current = np.array([30.0, 10.0]), np.array([12.0, 18.0])
    pooled = (30 + 12) / 70
    z = (30 / 40 - 12 / 30) / math.sqrt(pooled * (1 - pooled) * (1 / 40 + 1 / 30))
    statistic, p = stats.chi_square(reference, current)
    assert statistic == pytest.approx(z * z, rel=1e-12)  # no continuity correction
    assert p == pytest.approx(2 * scipy_stats.norm.sf(abs(z)), rel=1e-9)


def test_chi_square_drops_categories_empty_on_both_sides() -> None:
    reference, current = np.array([20.0, 0.0, 15.0, 5.0]), np.array([10.0, 0.0, 5.0, 15.0])
    table = np.array([[20.0, 15.0, 5.0], [10.0, 5.0, 15.0]])
    want = scipy_stats.chi2_contingency(table, correction=False)
    assert stats.chi_square(reference, current) == (float(want.statistic), float(want.pvalue))


def test_chi_square_keeps_a_category_seen_once() -> None:
    reference, current = np.array([20.0, 1.0, 10.0]), np.array([10.0, 0.0, 10.0])
    want = scipy_stats.chi2_contingency(np.vstack([reference, current]), correction=False)
    assert stats.chi_square(reference, current) == (float(want.statistic), float(want.pvalue))


def test_chi_square_keeps_a_category_only_one_side_has() -> None:
    statistic, p = stats.chi_square(np.array([20.0, 10.0, 0.0]), np.array([10.0, 10.0, 10.0]))
    want = scipy_stats.chi2_contingency(np.array([[20.0, 10.0, 0.0], [10.0, 10.0, 10.0]]), correction=False)
    assert (statistic, p) == (float(want.statistic), float(want.pvalue))


def test_chi_square_of_a_single_category_left_is_no_evidence() -> None:
    assert stats.chi_square(np.array([0.0, 40.0, 0.0]), np.array([0.0, 7.0, 0.0])) == (0.0, 1.0)


@pytest.mark.parametrize(("reference", "current"), [([0.0, 0.0], [3.0, 1.0]), ([2.0, 5.0], [0.0, 0.0])])
def test_chi_square_with_an_empty_side_is_nan(reference: list[float], current: list[float]) -> None:
    statistic, p = stats.chi_square(np.array(reference), np.array(current))
    assert math.isnan(statistic) and math.isnan(p)


def test_jensenshannon_is_scipys_distance_with_the_natural_log() -> None:
    reference, current = np.array([30.0, 10.0, 0.0]), np.array([5.0, 5.0, 10.0])
    want = distance.jensenshannon(reference / 40, current / 20)
    assert stats.jensenshannon(reference, current) == pytest.approx(want, rel=1e-12)
    assert stats.jensenshannon(reference, current) == pytest.approx(
        distance.jensenshannon(reference, current, base=math.e), rel=1e-12
    )


@pytest.mark.parametrize("empty", ["reference", "current"])
def test_jensenshannon_and_psi_of_an_empty_side_are_nan_without_a_warning(empty: str) -> None:
    counts = {"reference": np.array([3.0, 1.0]), "current": np.array([2.0, 2.0])}
    counts[empty] = np.zeros(2)
    with np.errstate(all="raise"):
        assert math.isnan(stats.jensenshannon(counts["reference"], counts["current"]))
        assert math.isnan(stats.psi(counts["reference"], counts["current"]))


def _psi(r: list[float], c: list[float]) -> float:
    return sum((a - b) * math.log(a / b) for a, b in zip(r, c, strict=True))


def test_psi_fills_a_zero_share_with_1e_4_when_every_share_is_above_it() -> None:
    reference, current = np.array([60.0, 40.0, 0.0]), np.array([50.0, 30.0, 20.0])
    want = _psi([0.6, 0.4, 1e-4], [0.5, 0.3, 0.2])
    assert stats.psi(reference, current) == pytest.approx(want, rel=1e-12)


def test_psi_fills_with_a_millionth_of_the_smallest_share_at_1e_4_and_below() -> None:
    reference, current = np.array([1.0, 9999.0, 0.0]), np.array([5.0, 5.0, 10.0])
    assert 1 / 10_000 == 1e-4  # the smallest share sits exactly on the threshold
    want = _psi([1e-4, 0.9999, 1e-10], [0.25, 0.25, 0.5])
    assert stats.psi(reference, current) == pytest.approx(want, rel=1e-12)
    below = np.array([1.0, 19999.0, 0.0])
    want_below = _psi([5e-5, 0.99995, 5e-11], [0.25, 0.25, 0.5])
    assert stats.psi(below, current) == pytest.approx(want_below, rel=1e-12)


def test_psi_fills_the_windows_zero_shares_too() -> None:
    reference, current = np.array([50.0, 30.0, 20.0]), np.array([60.0, 40.0, 0.0])
    want = _psi([0.5, 0.3, 0.2], [0.6, 0.4, 1e-4])
    assert stats.psi(reference, current) == pytest.approx(want, rel=1e-12)


def test_deciles_group_equal_reference_mass_and_carry_the_window_along() -> None:
    reference = np.ones(20)
    current = np.arange(20.0)
    ref, cur = stats.deciles(reference, current)
    np.testing.assert_array_equal(ref, np.full(10, 2.0))
    np.testing.assert_array_equal(cur, [current[i] + current[i + 1] for i in range(0, 20, 2)])


def test_deciles_of_few_bins_still_give_ten_groups() -> None:
    ref, cur = stats.deciles(np.array([5.0, 3.0, 2.0]), np.array([1.0, 2.0, 3.0]))
    # Each bin goes to the group where its reference mass starts: 0 → 0, 5/10 → 5, 8/10 → 8.
    np.testing.assert_array_equal(ref, [5, 0, 0, 0, 0, 3, 0, 0, 2, 0])
    np.testing.assert_array_equal(cur, [1, 0, 0, 0, 0, 2, 0, 0, 3, 0])
    ref, cur = stats.deciles(np.array([1.0, 0.0, 0.0]), np.array([0.0, 3.0, 4.0]))
    np.testing.assert_array_equal(cur, [0, 0, 0, 0, 0, 0, 0, 0, 0, 7])  # after the only reference row


def test_deciles_of_an_empty_reference_put_everything_in_the_first_group() -> None:
    ref, cur = stats.deciles(np.zeros(3), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(ref, np.zeros(10))
    np.testing.assert_array_equal(cur, [6, 0, 0, 0, 0, 0, 0, 0, 0, 0])


def test_categorical_vectors_put_new_categories_after_the_references_in_sorted_order() -> None:
    reference, current = stats.categorical_vectors(("b", "a"), (3, 4), {"z": 1, "a": 2, "c": 5})
    np.testing.assert_array_equal(reference, [3.0, 4.0, 0.0, 0.0])
    np.testing.assert_array_equal(current, [0.0, 2.0, 5.0, 1.0])


def _window(profile: Any, values: list[float]) -> NumericCounts:
    counts = NumericCounts(profile)
    counts.add(np.asarray(values, dtype=float))
    return counts


def test_wasserstein_of_a_constant_reference_divides_by_the_floor() -> None:
    profile = numeric_profile("x", np.full(50, 5.0))
    assert profile.std == 0
    assert stats.wasserstein_norm(profile, _window(profile, [6.0, 6.0])) == pytest.approx(1000.0, rel=1e-9)


def test_wasserstein_of_a_one_row_window_is_exact() -> None:
    # On a reference value or outside the range: no bin where the two CDFs cross (the documented limit).
    reference = np.array([1.0, 2.0, 2.0, 3.0, 7.0])
    profile = numeric_profile("x", reference)
    for value in (1.0, 2.0, 3.0, 7.0, 9.0, -1.0):
        want = scipy_stats.wasserstein_distance(reference, [value]) / reference.std()
        assert stats.wasserstein_norm(profile, _window(profile, [value])) == pytest.approx(want, rel=1e-9)
